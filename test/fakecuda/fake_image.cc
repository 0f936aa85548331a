// SPDX-License-Identifier: BSD-3-Clause
// fake_image.cc - module images and the driver versions they need (see fake_image.h).
#include "test/fakecuda/fake_image.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fakecuda {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint16_t kKindPtx = 1, kKindElf = 2;

// PTX ISA versions and the first CUDA release (driver) that reads them.
struct Isa { int major, minor, driver; };
constexpr Isa kPtxIsa[] = {
    {7, 0, 11000}, {7, 1, 11010}, {7, 2, 11020}, {7, 3, 11030}, {7, 4, 11040}, {7, 5, 11050}, {7, 6, 11060},
    {7, 7, 11070}, {7, 8, 11080}, {8, 0, 12000}, {8, 1, 12010}, {8, 2, 12020}, {8, 3, 12030}, {8, 4, 12040},
    {8, 5, 12050}, {8, 6, 12070}, {8, 7, 12080}, {8, 8, 12090}, {9, 0, 13000}, {9, 1, 13010},
};

struct Entry {
    bool ptx;
    int arch;         // e.g. 90
    int needs;        // the driver version it needs (0: any)
    char what[64];    // e.g. "sm_90 ELF (CUDA 13.0)"
};

// The "release X.Y" of the toolkit that built an ELF, from its notes; 0 if none.
int elf_toolkit(const char *p, size_t n) {
    static const char tag[] = "Cuda compilation tools, release ";
    const size_t tl = sizeof tag - 1;
    for (size_t i = 0; i + tl + 3 < n; ++i) {
        if (p[i] != 'C' || std::memcmp(p + i, tag, tl) != 0) continue;
        int maj = 0, min = 0;
        if (std::sscanf(p + i + tl, "%d.%d", &maj, &min) == 2) return maj * 1000 + min * 10;
    }
    return 0;
}

bool ptx_text(const char *p, size_t n, Entry *e) {
    const char *v = static_cast<const char *>(memmem(p, n, ".version ", 9));
    const char *t = static_cast<const char *>(memmem(p, n, ".target sm_", 11));
    int maj = 0, min = 0, arch = 0;
    if (v == nullptr || t == nullptr || std::sscanf(v + 9, "%d.%d", &maj, &min) != 2 ||
        std::sscanf(t + 11, "%d", &arch) != 1)
        return false;
    e->ptx = true;
    e->arch = arch;
    e->needs = ptx_isa_driver(maj, min);
    std::snprintf(e->what, sizeof e->what, "compute_%d PTX ISA %d.%d", arch, maj, min);
    return true;
}

void elf_entry(const char *p, size_t n, int arch, Entry *e) {
    e->ptx = false;
    e->arch = arch;
    const int tk = elf_toolkit(p, n);
    e->needs = tk / 1000 * 1000;  // minor version compatibility: any driver of that major
    std::snprintf(e->what, sizeof e->what, "sm_%d ELF (CUDA %d.%d)", arch, tk / 1000, tk % 1000 / 10);
}

// An ELF's architecture from its header (EF_CUDA_SM in e_flags: bits 0-7 in the
// old ABI, 8-15 in the new one); 0 if unreadable.
int elf_arch(const unsigned char *p, size_t n) {
    if (n < 52 || std::memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 || n < 64) return 0;
    uint32_t flags = 0;
    std::memcpy(&flags, p + 48, 4);
    const int lo = int(flags & 0xff), hi = int((flags >> 8) & 0xff);
    return lo >= 30 ? lo : hi;
}

}  // namespace

int ptx_isa_driver(int major, int minor) {
    int need = 0;
    for (const Isa &i : kPtxIsa)
        if (i.major < major || (i.major == major && i.minor <= minor)) need = i.driver;
    const Isa &last = kPtxIsa[sizeof kPtxIsa / sizeof kPtxIsa[0] - 1];
    if (major > last.major || (major == last.major && minor > last.minor)) need = 99999;  // unknown: newer
    return need;
}

int image_loadable(const void *image, int cc, int driver_version, std::string *why) {
    const unsigned char *b = static_cast<const unsigned char *>(image);
    Entry entries[32];
    int n = 0;
    uint32_t magic = 0;
    std::memcpy(&magic, b, 4);
    if (magic == kFatbinMagic) {
        uint16_t hs = 0;
        uint64_t fat = 0;
        std::memcpy(&hs, b + 6, 2);
        std::memcpy(&fat, b + 8, 8);
        for (uint64_t off = hs; off + 32 <= hs + fat && n < 32;) {
            uint16_t kind = 0;
            uint32_t ehs = 0, ver = 0, arch = 0, flags = 0;
            uint64_t size = 0;
            std::memcpy(&kind, b + off, 2);
            std::memcpy(&ehs, b + off + 4, 4);
            std::memcpy(&size, b + off + 8, 8);
            std::memcpy(&ver, b + off + 24, 4);
            std::memcpy(&arch, b + off + 28, 4);
            if (ehs >= 64) std::memcpy(&flags, b + off + 40, 4);
            const char *payload = reinterpret_cast<const char *>(b + off + ehs);
            Entry &e = entries[n];
            if (kind == kKindPtx) {
                // The entry header says the ISA (major in the high half); the payload
                // may be compressed, so it is not read.
                e.ptx = true;
                e.arch = int(arch);
                e.needs = ptx_isa_driver(int(ver >> 16), int(ver & 0xffff));
                std::snprintf(e.what, sizeof e.what, "compute_%u PTX ISA %u.%u", arch, ver >> 16, ver & 0xffff);
                ++n;
            } else if (kind == kKindElf) {
                elf_entry(payload, size_t(size), int(arch), &e);
                ++n;
            }
            (void)flags;
            if (ehs == 0 || size == 0) break;
            off += ehs + size;
        }
    } else if (int arch = elf_arch(b, 64)) {
        // A bare cubin: its size is in the section headers; the notes are near the start.
        elf_entry(reinterpret_cast<const char *>(b), 64 << 10, arch, &entries[n++]);
    } else if (ptx_text(reinterpret_cast<const char *>(b), strnlen(reinterpret_cast<const char *>(b), 1 << 24),
                        &entries[n])) {
        ++n;
    }
    if (n == 0) {
        *why = "not a fatbin, cubin or PTX";
        return E_INVALID_IMAGE;
    }
    bool ptx_too_new = false;
    std::string seen;
    for (int i = 0; i < n; ++i) {
        const Entry &e = entries[i];
        const bool arch_ok = e.ptx ? e.arch <= cc : (e.arch / 10 == cc / 10 && e.arch <= cc);
        if (!seen.empty()) seen += ", ";
        seen += e.what;
        if (!arch_ok) continue;
        if (e.needs <= driver_version) return 0;
        ptx_too_new = ptx_too_new || e.ptx;
    }
    char head[96];
    std::snprintf(head, sizeof head, "driver %d.%d, GPU sm_%d: ", driver_version / 1000, driver_version % 1000 / 10,
                  cc);
    *why = head + seen;
    return ptx_too_new ? E_UNSUPPORTED_PTX_VERSION : E_NO_BINARY_FOR_GPU;
}

}  // namespace fakecuda
