/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/version.h: the version of the core's interface these headers
 * declare, which is the project's (meson.build; tests/check_interface.py
 * holds them equal).  A program that needs something added in a later
 * version tests MKV_VERSION_NUM at compile time, as with curl's
 * LIBCURL_VERSION_NUM. */
#ifndef MOONCAKE_KV_VERSION_H
#define MOONCAKE_KV_VERSION_H

#define MKV_VERSION_MAJOR  0
#define MKV_VERSION_MINOR  4
#define MKV_VERSION_PATCH  0
#define MKV_VERSION_STRING "0.4.0"
/* 0xMMmmpp: comparable with > and < */
#define MKV_VERSION_NUM ((MKV_VERSION_MAJOR << 16) | (MKV_VERSION_MINOR << 8) | MKV_VERSION_PATCH)

#endif
