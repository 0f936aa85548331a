# SPDX-License-Identifier: BSD-3-Clause
# contrib/chroot-lib.sh - what contrib/ompi5-chroot and contrib/bare-rehearsal share:
# a Debian root file system made once with debootstrap and kept outside the repo, and
# commands run inside it in a private mount namespace (unshare -m), so that nothing
# stays mounted after exit, not even when the script is killed. Sourced, not run.

# The Debian mirror: $1 when set, else this machine's first apt source, else
# deb.debian.org.
chroot_mirror() {
    [ -n "${1:-}" ] && { echo "$1"; return; }
    local m
    m=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
    [ -z "$m" ] && m=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    echo "${m:-http://deb.debian.org/debian}"
}

# chroot_cannot ROOT STAMP: why this machine cannot make or enter the root (ROOT is
# ready when ROOT/.strata-ready holds STAMP), or nothing.
chroot_cannot() {
    [ "$(id -u)" = 0 ] || { echo "not root: debootstrap and chroot need root"; return; }
    command -v chroot >/dev/null 2>&1 || { echo "no chroot command"; return; }
    command -v unshare >/dev/null 2>&1 || { echo "no unshare (util-linux)"; return; }
    unshare --mount --propagation private true 2>/dev/null || { echo "no mount namespaces here (unshare -m refused)"; return; }
    if ! chroot_ready "$1" "$2"; then
        command -v debootstrap >/dev/null 2>&1 ||
            { echo "no root file system at $1 and no debootstrap (apt-get install debootstrap)"; return; }
    fi
}

chroot_ready() { [ -f "$1/.strata-ready" ] && [ "$(cat "$1/.strata-ready" 2>/dev/null)" = "$2" ]; }

# chroot_enter ROOT SHM_SIZE CUDA_DIR CMD...: CMD inside ROOT, with /proc, /sys, /dev,
# a /dev/shm of its own of SHM_SIZE (tmpfs size= syntax; the tests count strata's
# segments there, and other jobs of this machine must not show up in them, nor ours in
# theirs) and, when CUDA_DIR is not empty, that CUDA toolkit read-only at the same path.
# The environment is emptied but for PATH, HOME, LANG, TERM.
chroot_enter() {
    local root=$1 shm=$2 cuda=$3; shift 3
    unshare --mount --propagation private env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 TERM=dumb "ROOT=$root" "SHM_SIZE=$shm" "CUDA_DIR=$cuda" bash -c '
        set -e
        mount -t proc proc "$ROOT/proc"
        mount --bind /sys "$ROOT/sys"
        mount --bind /dev "$ROOT/dev"
        mount -t tmpfs -o "mode=1777,nosuid,nodev,size=$SHM_SIZE" tmpfs "$ROOT/dev/shm"
        [ -d /dev/pts ] && mount --bind /dev/pts "$ROOT/dev/pts" || true
        if [ -n "$CUDA_DIR" ]; then
            mkdir -p "$ROOT$CUDA_DIR" && mount --bind "$CUDA_DIR" "$ROOT$CUDA_DIR" &&
                mount -o remount,bind,ro "$ROOT$CUDA_DIR" || true
        fi
        cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
        set +e
        exec chroot "$ROOT" "$@"' inside "$@"
}

# chroot_bootstrap ROOT SUITE MIRROR LOG STAMP [CMD...]: makes ROOT with
# debootstrap --variant=minbase, then runs CMD inside it (packages, sources), and
# stamps it. Only ever removes what it made (stamped, or marked .strata-making until then).
# Returns 0, 77 when there is no network to fetch from (CHROOT_WHY says so), 1 on any
# other failure (the log's last lines on stderr).
chroot_bootstrap() {
    local root=$1 suite=$2 mirror=$3 log=$4 stamp=$5 rc; shift 5
    CHROOT_WHY=
    mkdir -p "$(dirname "$root")"
    if { [ -d "$root" ] && [ -n "$(ls -A "$root" 2>/dev/null)" ] && [ ! -f "$root/.strata-ready" ] &&
         [ ! -f "$root/.strata-making" ] && [ ! -d "$root/debootstrap" ]; } || [ "$(readlink -f "$root")" = / ]; then
        CHROOT_WHY="$root exists and was not made by these scripts; not touching it"
        return 1
    fi
    rm -rf "$root"
    # marked as ours until stamped, so that a making stopped at any point is made again
    mkdir -p "$root" && : >"$root/.strata-making" || { CHROOT_WHY="cannot write $root"; return 1; }
    { debootstrap --variant=minbase "$suite" "$root" "$mirror" && { [ $# -eq 0 ] || chroot_enter "$root" 50% "" "$@"; }
    } >"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "debootstrap of $suite failed (exit $rc), last lines of $log:" >&2
        tail -n 15 "$log" | sed 's/^/    | /' >&2
        if grep -qiE 'Failed getting release file|Temporary failure resolving|Could not resolve|Network is unreachable|Connection (refused|timed out)' "$log"; then
            CHROOT_WHY="no network to fetch $suite from $mirror (see $log)"
            return 77
        fi
        CHROOT_WHY="debootstrap or the commands after it failed (see $log)"
        return 1
    fi
    echo "$stamp" >"$root/.strata-ready" && rm -f "$root/.strata-making"
}

# chroot_copy_source SRC DEST: a clean copy of SRC's tracked (and new, unignored)
# sources into DEST, as contrib/check's without-cuda step makes: no build outputs.
chroot_copy_source() {
    local src=$1 dest=$2
    rm -rf "$dest"; mkdir -p "$dest"
    ( cd "$src" &&
      if command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
          git ls-files -co --exclude-standard
      else
          find . -type f ! -path './.git/*' | sed 's|^\./||'
      fi | grep -vE '(^|/)(Makefile|Makefile\.in|configure|config\.(status|log|cache)|libtool|aclocal\.m4|stamp-h[0-9]*|strata_autoconf\.h(\.in)?)$|\.(o|lo|la|so|a|log|trs)$|(^|/)(\.libs|\.deps|autom4te\.cache|build-aux|check-logs|_install)/' |
      while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done | tar -cf - -T - ) | tar -xf - -C "$dest"
}
