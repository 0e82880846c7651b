// SPDX-License-Identifier: GPL-2.0
#define KVT_SERVER 0
#include "kvt.c"
