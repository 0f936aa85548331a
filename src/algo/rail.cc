// SPDX-License-Identifier: BSD-3-Clause
// src/algo/rail.cc - allreduce among the ranks of one rail (one rank per node).
//
// ring: reduce-scatter then allgather around the rail, 2(P-1) steps of 1/P of
//       the data each; bandwidth-optimal, for large slices.
// rd:   recursive doubling, log2(P) exchanges of the whole buffer (non powers of
//       two fold the extra ranks in first and out last); for small messages.
// pair: two members swap their whole buffers and each folds the other's into its own
//       (device teams, calls of few segments: one round instead of the ring's two).
// direct: every member sends block m straight to member m, which folds the P copies
//       of its block in one reduction and sends the result
//       straight back to every member: the ring's bytes in 2 rounds of P-1
//       concurrent messages instead of 2(P-1) dependent steps. rail_allreduce picks
//       it over the ring from 3 members, where tmp holds the P-1 incoming blocks, up to
//       kDirectMaxBytes a member (the cost model, perf/MODEL.md: on 4 x 8 H100 it
//       beats the ring by 1.2-1.7x at 1-16 MiB calls, and loses 2-6% with slices of
//       2 MiB and more, where P-1 messages at once share one NIC).
// Both give every member bit-identical results: the predefined ops are
// commutative, and a + b == b + a exactly in IEEE arithmetic.
#include "algo/algo.h"

namespace strata {

uint64_t rail_tag_span(size_t members) { return 2 * members + 2; }

StepId rail_allreduce_ring(Call &c, const std::vector<int> &members, int pos,
                           char *buf, char *tmp, size_t count, strata_dtype_t dtype, strata_op_t op,
                           uint64_t tag_sub, const Deps &deps) {
    Schedule &s = c.schedule();
    Team &team = c.team();
    const int p = static_cast<int>(members.size());
    if (p == 1) return s.join(deps);
    const size_t es = strata_dtype_size(dtype);
    MemDomain &dom = team.domain();
    const int next = members[(pos + 1) % p], prev = members[(pos + p - 1) % p];
    auto block = [&](int b) { return split(count, size_t(p), size_t((b % p + p) % p)); };

    // Reduce-scatter: in step i send block pos-i, receive block pos-i-1 and fold it in.
    StepId last = s.join(deps);
    std::vector<StepId> sends;
    for (int i = 0; i < p - 1; ++i) {
        const Split out = block(pos - i), in = block(pos - i - 1);
        const int tag = c.tag(tag_sub + uint64_t(i));
        sends.push_back(s.send(buf + out.offset * es, out.length * es, next, tag, {last}));
        const StepId r = s.recv(tmp + in.offset * es, in.length * es, prev, tag, {last});
        last = s.reduce(dom, buf + in.offset * es, {buf + in.offset * es, tmp + in.offset * es},
                        in.length, dtype, op, {r});
    }
    // Allgather: block pos+1 is final here; pass final blocks around. A received
    // block overwrites one an earlier send read, so wait for all of those.
    sends.push_back(last);
    last = s.join(sends);
    std::vector<StepId> all{last};
    for (int i = 0; i < p - 1; ++i) {
        const Split out = block(pos + 1 - i), in = block(pos - i);
        const int tag = c.tag(tag_sub + uint64_t(p - 1 + i));
        all.push_back(s.send(buf + out.offset * es, out.length * es, next, tag, {last}));
        last = s.recv(buf + in.offset * es, in.length * es, prev, tag, {last});
        all.push_back(last);
    }
    return s.join(all);
}

namespace {
StepId rail_allreduce_direct(Call &c, const std::vector<int> &members, int pos, char *buf, char *tmp,
                             size_t count, strata_dtype_t dtype, strata_op_t op, uint64_t tag_sub, const Deps &deps) {
    Schedule &s = c.schedule();
    const int p = static_cast<int>(members.size());
    if (p == 1) return s.join(deps);
    const size_t es = strata_dtype_size(dtype);
    MemDomain &dom = c.team().domain();
    auto block = [&](int b) { return split(count, size_t(p), size_t(b)); };
    const Split mine = block(pos);
    const int scatter = c.tag(tag_sub), gather = c.tag(tag_sub + 1);
    const StepId start = s.join(deps);

    // Reduce-scatter: block m to member m; member m's copy of my block into tmp. Mine
    // is the first operand (the reduction's destination may only be its first source),
    // then the others in position order.
    std::vector<StepId> sent(size_t(p), kNoStep);
    std::vector<const void *> parts{buf + mine.offset * es};
    Deps got{start};
    int k = 0;
    for (int m = 0; m < p; ++m) {
        if (m == pos) continue;
        const Split b = block(m);
        sent[size_t(m)] = s.send(buf + b.offset * es, b.length * es, members[m], scatter, {start});
        char *t = tmp + size_t(k++) * mine.length * es;
        got.add(s.recv(t, mine.length * es, members[m], scatter, {start}));
        parts.push_back(t);
    }
    const StepId red = s.reduce(dom, buf + mine.offset * es, parts, mine.length, dtype, op, got);
    // Allgather: my final block to every member; theirs over the blocks my sends read.
    std::vector<StepId> all{red};
    for (int m = 0; m < p; ++m) {
        if (m == pos) continue;
        const Split b = block(m);
        all.push_back(s.send(buf + mine.offset * es, mine.length * es, members[m], gather, {red}));
        all.push_back(s.recv(buf + b.offset * es, b.length * es, members[m], gather, {sent[size_t(m)]}));
    }
    return s.join(all);
}

// Two members: each sends its whole buffer to the other and folds the other's into its
// own (its own first: a + b == b + a exactly). One message round and one reduction
// where the ring takes two dependent rounds and two messages each way, with the same
// bytes on the wire; the fold is twice the ring's, cheap on a GPU. Device teams take
// it for calls of few segments, whose pipeline cannot hide the ring's second round
// (perf/MODEL.md, 2 x 8 H100: 1.1-1.3x the ring's busbw at 1-16 MiB, and at 64 MiB
// in 16 MiB segments; in 8 of 8 MiB the ring is 2% ahead).
StepId rail_allreduce_pair(Call &c, const std::vector<int> &members, int pos, char *buf, char *tmp,
                           size_t count, strata_dtype_t dtype, strata_op_t op, uint64_t tag_sub, const Deps &deps) {
    Schedule &s = c.schedule();
    const size_t bytes = count * strata_dtype_size(dtype);
    const int peer = members[size_t(1 - pos)], tag = c.tag(tag_sub);
    const StepId start = s.join(deps);
    // The fold overwrites buf, which the send reads: it waits for the send too.
    const StepId sent = s.send(buf, bytes, peer, tag, {start}), got = s.recv(tmp, bytes, peer, tag, {start});
    return s.reduce(c.team().domain(), buf, {buf, tmp}, count, dtype, op, {sent, got});
}
}  // namespace

StepId rail_allreduce(Call &c, const std::vector<int> &members, int pos, char *buf, char *tmp, size_t count,
                      strata_dtype_t dtype, strata_op_t op, uint64_t tag_sub, const Deps &deps, bool few) {
    constexpr size_t kDirectMaxBytes = size_t(1) << 20;
    const size_t p = members.size();
    // Agreed: every member has the same members, count and type, and the same memory
    // (the team's). tmp (count elements) holds P-1 blocks of at most ceil(count/P)
    // from count >= P(P-1).
    if (p == 2 && few && c.team().device())
        return rail_allreduce_pair(c, members, pos, buf, tmp, count, dtype, op, tag_sub, deps);
    if (p >= 3 && count >= p * (p - 1) && count * strata_dtype_size(dtype) <= kDirectMaxBytes)
        return rail_allreduce_direct(c, members, pos, buf, tmp, count, dtype, op, tag_sub, deps);
    return rail_allreduce_ring(c, members, pos, buf, tmp, count, dtype, op, tag_sub, deps);
}

StepId rail_allreduce_rd(Call &c, const std::vector<int> &members, int pos,
                         char *buf, char *tmp, size_t count, strata_dtype_t dtype, strata_op_t op,
                         uint64_t tag_sub, const Deps &deps) {
    Schedule &s = c.schedule();
    Team &team = c.team();
    const int p = static_cast<int>(members.size());
    if (p == 1) return s.join(deps);
    const size_t bytes = count * strata_dtype_size(dtype);
    MemDomain &dom = team.domain();
    int p2 = 1;
    while (p2 * 2 <= p) p2 *= 2;
    const int extra = p - p2;
    int rounds = 0;
    while ((1 << rounds) < p2) ++rounds;
    // Tags: tag_sub folds in, tag_sub + 1 + round exchanges, tag_sub + 1 + rounds unfolds.
    const int unfold_tag = c.tag(tag_sub + 1 + uint64_t(rounds));

    // Fold: among the first 2*extra positions, even ones hand their data to the
    // next odd one and sit out; the rest renumber to 0..p2-1.
    StepId last = s.join(deps);
    int vpos;
    if (pos < 2 * extra) {
        const int tag = c.tag(tag_sub);
        if (pos % 2 == 0) {
            const StepId snd = s.send(buf, bytes, members[pos + 1], tag, {last});
            // Unfold: receive the final result from the partner.
            return s.recv(buf, bytes, members[pos + 1], unfold_tag, {snd});
        }
        const StepId r = s.recv(tmp, bytes, members[pos - 1], tag, {last});
        last = s.reduce(dom, buf, {buf, tmp}, count, dtype, op, {r});
        vpos = pos / 2;
    } else {
        vpos = pos - extra;
    }
    auto real = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };

    int round = 0;
    for (int mask = 1; mask < p2; mask <<= 1, ++round) {
        const int peer = members[real(vpos ^ mask)];
        const int tag = c.tag(tag_sub + 1 + uint64_t(round));
        const StepId snd = s.send(buf, bytes, peer, tag, {last});
        const StepId r = s.recv(tmp, bytes, peer, tag, {last});
        // Both operands in the same order on both partners: lower position first.
        const bool low = vpos < (vpos ^ mask);
        last = s.reduce(dom, buf, {low ? buf : tmp, low ? tmp : buf}, count, dtype, op, {snd, r});
    }
    if (pos < 2 * extra) {  // odd fold partner: give the result back
        last = s.send(buf, bytes, members[pos - 1], unfold_tag, {last});
    }
    return last;
}

}  // namespace strata
