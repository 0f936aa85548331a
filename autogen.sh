#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates the build system (configure, Makefile.in, build-aux/, m4/ libtool macros).
# Needs autoconf >= 2.69, automake >= 1.13, libtool and pkg-config (for pkg.m4).
set -e
cd "$(dirname "$0")"
for tool in autoreconf automake libtoolize pkg-config; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "autogen.sh: '$tool' not found; on Debian: apt-get install autoconf automake libtool pkg-config" >&2
        exit 1
    }
done
mkdir -p build-aux m4
autoreconf --force --install --verbose "$@"
echo "autogen.sh: now run ./configure && make && make install"
