/* SPDX-License-Identifier: BSD-3-Clause */
// src/algo/rules.h - algorithm selection as data: a rules file, one line per rule.
//
// A rules file says, per collective, which algorithm of its table runs for which
// calls (docs/rules.md has the format). Each line is
//
//   collective  bytes  nodes  ranks/node  memory  algorithm  [segment=BYTES]
//
// bytes, nodes and ranks/node are inclusive ranges (N, A-B, A- or *; bytes take
// K, M, G suffixes, powers of 1024), memory is host, device or *. The first line
// that matches a call wins; a call no line matches takes the built-in rule of its
// table. Collectives and algorithm names are checked against the tables
// (algo.h), so a file that loads names only algorithms this build has.
//
// What a rule may look at is what every rank agrees on (no rank-local input):
// the size of the call as every rank sees it (runner.cc's call_bytes), the team's
// layout and where the team's schedules run (Team::device(): GPU or host memory,
// agreed at setup), never this rank's own buffer kind. Ranks must also hold the
// same rules: compare hash() across ranks before using them.
#ifndef STRATA_ALGO_RULES_H
#define STRATA_ALGO_RULES_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace strata {

// A closed range [lo, hi]; * is [0, max].
struct RuleRange {
    uint64_t lo = 0, hi = UINT64_MAX;
    bool contains(uint64_t v) const { return lo <= v && v <= hi; }
};

enum class RuleMemory { Any, Host, Device };

// The algorithm name that hands the calls a rule matches back to the component
// strata replaced (where that one measured faster: perf/strata-tune).
constexpr const char *kHandBack = "base";

struct Rule {
    strata_coll_t coll = STRATA_COLL_ALLREDUCE;
    RuleRange bytes, nodes, ranks_per_node;
    RuleMemory memory = RuleMemory::Any;
    std::string algorithm;  // a name in coll's table, or kHandBack
    size_t segment = 0;     // segment=BYTES; 0: not given
    int line = 0;           // where it came from, for messages
};

class Rules {
public:
    // The algorithm of the first rule that matches, or nullptr (take the built-in
    // rule). bytes: the call's size as every rank sees it; nodes, ranks_per_node:
    // the team's layout (Layout::nnodes, max_local_size); device: the team's
    // schedules run in GPU memory. *segment (when not null) gets the rule's segment
    // size, 0 when it gives none or no rule matches. The name lives as long as this.
    const char *choose(strata_coll_t coll, size_t bytes, int nodes, int ranks_per_node, bool device,
                       size_t *segment) const;
    // The same question, answered with the whole rule (its line, for logs); nullptr
    // when none matches.
    const Rule *match(strata_coll_t coll, size_t bytes, int nodes, int ranks_per_node, bool device) const;
    // FNV-1a over the parsed rules (not the text: comments and spacing do not
    // count), equal on two ranks exactly when their rules choose alike.
    uint64_t hash() const;
    bool empty() const { return rules_.empty(); }
    // Whether r is one of these rules (an answer of match()).
    bool owns(const Rule *r) const { return r != nullptr && r >= rules_.data() && r < rules_.data() + rules_.size(); }
    size_t size() const { return rules_.size(); }
    const std::vector<Rule> &rules() const { return rules_; }
    // The file the rules came from ("" for parse_rules of a name-less text).
    const std::string &source() const { return source_; }

private:
    friend Status parse_rules(const std::string &text, const char *name, Rules *out, std::string *error);
    std::vector<Rule> rules_;
    std::string source_;
};

// The built-in rules of a host-memory team (a team of ranks without GPUs, run with
// coll_strata_host_buffers): the calls that the component strata replaced (Open
// MPI's tuned) served faster than strata in at least one layout measured (README
// "Measured"), handed back to it. They apply after the rules file and the
// coll_strata_*_algorithm settings, and only with coll_strata_host_handback (on by
// default). Device teams have none: there the replaced component stages GPU memory
// through the host, and strata's GPU algorithms are the point.
const Rules &builtin_host_rules();
// Their text, in the rules file format (docs/rules.md shows it).
const char *builtin_host_rules_text();

// Reads and parses the rules file at path. STRATA_OK: *out holds its rules (none
// for a file of comments and blank lines). Otherwise *out is left empty, *error
// is one line "path:line: what is wrong" (or "path: cannot read: why"), and the
// caller keeps the built-in rules: STRATA_ERR_SYS when the file cannot be read,
// STRATA_ERR_ARG when a line is malformed (the first bad line is reported).
// Logs nothing; the caller decides who says it.
Status load_rules(const char *path, Rules *out, std::string *error);
// The same over text in memory; name stands for the file in messages.
Status parse_rules(const std::string &text, const char *name, Rules *out, std::string *error);

}  // namespace strata

#endif
