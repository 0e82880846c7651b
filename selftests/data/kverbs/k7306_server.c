// SPDX-License-Identifier: GPL-2.0
#define K7306_SERVER 1
#include "k7306.c"
