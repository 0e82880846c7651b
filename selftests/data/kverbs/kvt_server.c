// SPDX-License-Identifier: GPL-2.0
#define KVT_SERVER 1
#include "kvt.c"
