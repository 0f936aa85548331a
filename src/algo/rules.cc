// SPDX-License-Identifier: BSD-3-Clause
// src/algo/rules.cc - reading a rules file (rules.h) and choosing from it.
#include "algo/rules.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "algo/algo.h"

namespace strata {

namespace {

constexpr size_t kMinSegment = 64, kMaxSegment = size_t(1) << 30;  // as coll_strata_segment_size
constexpr size_t kMaxFileBytes = size_t(1) << 20;  // a rules file is a few lines

// A token as a message shows it: quoted, at most 40 characters, no control bytes.
std::string quoted(const std::string &s) {
    std::string q = "'";
    for (size_t i = 0; i < s.size() && i < 40; ++i) q += s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    return q + (s.size() > 40 ? "...'" : "'");
}

// The line's fields, separated by blanks; '#' starts a comment.
std::vector<std::string> fields_of(const std::string &line) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : line) {
        if (c == '#') break;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

// Decimal digits, then (sizes only) one of K, M, G (either case, powers of 1024).
// False on anything else, including a value that does not fit 64 bits.
bool parse_number(const std::string &s, bool sizes, uint64_t *v) {
    size_t i = 0;
    uint64_t n = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        const uint64_t d = uint64_t(s[i] - '0');
        if (n > (UINT64_MAX - d) / 10) return false;
        n = n * 10 + d;
    }
    if (i == 0) return false;
    int shift = 0;
    if (sizes && i + 1 == s.size()) {
        switch (s[i]) {
            case 'K': case 'k': shift = 10; break;
            case 'M': case 'm': shift = 20; break;
            case 'G': case 'g': shift = 30; break;
            default: return false;
        }
        ++i;
    }
    if (i != s.size() || (shift && n > (UINT64_MAX >> shift))) return false;
    *v = n << shift;
    return true;
}

// N, A-B, A- or *. Empty *why: the text is no range at all; else why it is unusable.
bool parse_range(const std::string &s, bool sizes, RuleRange *r, std::string *why) {
    why->clear();
    if (s == "*") {
        *r = RuleRange{};
        return true;
    }
    const size_t dash = s.find('-');
    if (dash == std::string::npos) {
        if (!parse_number(s, sizes, &r->lo)) return false;
        r->hi = r->lo;
        return true;
    }
    const std::string lo = s.substr(0, dash), hi = s.substr(dash + 1);
    if (!parse_number(lo, sizes, &r->lo)) return false;
    r->hi = UINT64_MAX;
    if (!hi.empty() && !parse_number(hi, sizes, &r->hi)) return false;
    if (r->lo > r->hi) *why = "is empty (its low end is above its high end)";
    return why->empty();
}

std::string known_collectives() {
    std::string s;
    for (int c = 0; c < STRATA_COLL_COUNT; ++c)
        s += std::string(c ? ", " : "") + strata_coll_name(strata_coll_t(c));
    return s;
}

std::string known_algorithms(const AlgorithmTable &t) {
    std::string s;
    for (int i = 0; i < t.count; ++i) s += std::string(i ? ", " : "") + t.algorithms[i].name;
    return s;
}

// Parses one non-blank line into *rule; false with *what set when it is malformed.
bool parse_line(const std::vector<std::string> &f, Rule *rule, std::string *what) {
    if (f.size() < 6) {
        *what = "expected 'collective bytes nodes ranks/node memory algorithm [segment=BYTES]', found " +
                std::to_string(f.size()) + " field" + (f.size() == 1 ? "" : "s");
        return false;
    }
    int coll = 0;
    while (coll < STRATA_COLL_COUNT && f[0] != strata_coll_name(strata_coll_t(coll))) ++coll;
    if (coll == STRATA_COLL_COUNT) {
        *what = "unknown collective " + quoted(f[0]) + " (known: " + known_collectives() + ")";
        return false;
    }
    rule->coll = strata_coll_t(coll);
    const char *const names[3] = {"bytes", "nodes", "ranks/node"};
    RuleRange *ranges[3] = {&rule->bytes, &rule->nodes, &rule->ranks_per_node};
    for (int k = 0; k < 3; ++k) {
        std::string why;
        if (!parse_range(f[size_t(k) + 1], k == 0, ranges[k], &why)) {
            *what = std::string(names[k]) + " range " + quoted(f[size_t(k) + 1]) + " " +
                    (why.empty() ? std::string("is not N, A-B, A- or *") + (k == 0 ? " (sizes may end in K, M or G)" : "")
                                 : why);
            return false;
        }
        if (k > 0 && ranges[k]->hi == 0) {  // a team has at least one node of one rank
            *what = std::string(names[k]) + " range " + quoted(f[size_t(k) + 1]) + " matches no team (it starts at 1)";
            return false;
        }
    }
    if (f[4] == "*") {
        rule->memory = RuleMemory::Any;
    } else if (f[4] == "host") {
        rule->memory = RuleMemory::Host;
    } else if (f[4] == "device") {
        rule->memory = RuleMemory::Device;
    } else {
        *what = "unknown memory " + quoted(f[4]) + " (known: host, device, *)";
        return false;
    }
    const AlgorithmTable &table = algorithm_table(rule->coll);
    if (table.find(f[5].c_str()) < 0 && f[5] != kHandBack) {
        *what = "unknown algorithm " + quoted(f[5]) + " for " + f[0] + " (known: " + known_algorithms(table) + ", " +
                kHandBack + ")";
        return false;
    }
    rule->algorithm = f[5];
    for (size_t k = 6; k < f.size(); ++k) {
        const std::string key = f[k].substr(0, f[k].find('='));
        if (key != "segment" || key.size() == f[k].size()) {
            *what = "unknown option " + quoted(f[k]) + " (known: segment=BYTES)";
            return false;
        }
        if (rule->segment != 0) {
            *what = "segment given twice";
            return false;
        }
        uint64_t v = 0;
        if (!parse_number(f[k].substr(key.size() + 1), true, &v) || v < kMinSegment || v > kMaxSegment) {
            *what = "segment " + quoted(f[k].substr(key.size() + 1)) + " is not a size from 64 to 1G";
            return false;
        }
        rule->segment = size_t(v);
    }
    return true;
}

struct Fnv {
    uint64_t h = 1469598103934665603ull;
    void add(uint64_t v) {
        for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
    }
    void add(const std::string &s) {
        add(uint64_t(s.size()));
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    }
};

}  // namespace

Status parse_rules(const std::string &text, const char *name, Rules *out, std::string *error) {
    *out = Rules{};
    error->clear();
    Rules parsed;
    parsed.source_ = name ? name : "";
    const std::string where = name && *name ? name : "(rules)";
    size_t at = 0;
    for (int line = 1; at < text.size(); ++line) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        const std::vector<std::string> f = fields_of(text.substr(at, end - at));
        at = end + 1;
        if (f.empty()) continue;
        Rule rule;
        std::string what;
        if (!parse_line(f, &rule, &what)) {
            *error = where + ":" + std::to_string(line) + ": " + what;
            return STRATA_ERR_ARG;
        }
        rule.line = line;
        parsed.rules_.push_back(rule);
    }
    *out = std::move(parsed);
    return STRATA_OK;
}

Status load_rules(const char *path, Rules *out, std::string *error) {
    *out = Rules{};
    if (path == nullptr || *path == '\0') {
        *error = "no rules file named";
        return STRATA_ERR_ARG;
    }
    // Opened without blocking (a FIFO would wait for a writer inside MPI_Init) and read
    // only when it is a regular file.
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *error = std::string(path) + ": cannot read: " + strerror(errno);
        return STRATA_ERR_SYS;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        *error = std::string(path) + ": not a regular file";
        return STRATA_ERR_ARG;
    }
    FILE *fp = fdopen(fd, "r");
    if (fp == nullptr) {
        *error = std::string(path) + ": cannot read: " + strerror(errno);
        close(fd);
        return STRATA_ERR_SYS;
    }
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0 && text.size() <= kMaxFileBytes) text.append(buf, n);
    const int err = ferror(fp) ? errno : 0;
    fclose(fp);
    if (err != 0) {
        *error = std::string(path) + ": cannot read: " + strerror(err);
        return STRATA_ERR_SYS;
    }
    if (text.size() > kMaxFileBytes) {
        *error = std::string(path) + ": larger than 1 MiB, not a rules file";
        return STRATA_ERR_ARG;
    }
    return parse_rules(text, path, out, error);
}

const char *builtin_host_rules_text() {
    // Host memory, built in. Sizes are the rules' call sizes (docs/rules.md); lines
    // start at 1 byte where an alltoallv (size 0 to the rules) must stay out. Up to
    // the size where tuned was faster in any layout measured on the reference
    // machine (README "Measured": 2 ranks as 2 nodes, 4 ranks as 2 x 2, 2 ranks on one
    // node, host buffers, strata_bench with and without strata in one job, twice),
    // strata hands the call back; above it strata was within noise or faster.
    return "allreduce       0-8K     *  *  host  base\n"
           "reduce_scatter  0-32K    *  *  host  base\n"
           "reduce          0-1M     *  *  host  base\n"
           "reduce          *        *  1  host  base\n"  // one rank per node: tuned's pipeline, no hierarchy to gain
           "reduce          *        1  *  host  base\n"  // one node: tuned's single copy against strata's three passes
           "allgather       0-256K   *  *  host  base\n"
           "bcast           0-256K   *  *  host  base\n"
           "alltoall        1-256K   *  *  host  base\n";
}

const Rules &builtin_host_rules() {
    static const Rules rules = [] {
        Rules r;
        std::string error;
        (void)parse_rules(builtin_host_rules_text(), "built-in host rules", &r, &error);  // rules_test checks it parses
        return r;
    }();
    return rules;
}

const Rule *Rules::match(strata_coll_t coll, size_t bytes, int nodes, int ranks_per_node, bool device) const {
    const RuleMemory kind = device ? RuleMemory::Device : RuleMemory::Host;
    for (const Rule &r : rules_) {
        if (r.coll == coll && r.bytes.contains(bytes) && r.nodes.contains(uint64_t(nodes > 0 ? nodes : 0)) &&
            r.ranks_per_node.contains(uint64_t(ranks_per_node > 0 ? ranks_per_node : 0)) &&
            (r.memory == RuleMemory::Any || r.memory == kind))
            return &r;
    }
    return nullptr;
}

const char *Rules::choose(strata_coll_t coll, size_t bytes, int nodes, int ranks_per_node, bool device,
                          size_t *segment) const {
    const Rule *r = match(coll, bytes, nodes, ranks_per_node, device);
    if (segment) *segment = r ? r->segment : 0;
    return r ? r->algorithm.c_str() : nullptr;
}

uint64_t Rules::hash() const {
    Fnv f;
    f.add(uint64_t(1));  // the format's version
    f.add(uint64_t(rules_.size()));
    for (const Rule &r : rules_) {
        f.add(uint64_t(r.coll));
        for (const RuleRange *g : {&r.bytes, &r.nodes, &r.ranks_per_node}) {
            f.add(g->lo);
            f.add(g->hi);
        }
        f.add(uint64_t(r.memory));
        f.add(r.algorithm);
        f.add(uint64_t(r.segment));
    }
    return f.h;
}

}  // namespace strata
