/* SPDX-License-Identifier: BSD-3-Clause */
// btl/channels.h - the registry of point-to-point channel kinds (btl/p2p.h).
//
// A team does not build its channel itself: it asks each registered kind, in the
// order of the table in channels.cc, whether it can connect the team, and takes the
// kind the setting coll_strata_p2p_channel names ("auto": the first that can). Each
// rank answers alone; Team's setup then agrees on the answer (the same kind on every
// rank, else the transport channel everywhere, said once), connects the chosen kind
// (connect(), collective over the wire), and agrees again that every rank connected.
// Where the chosen kind cannot touch device memory a device team wraps it in the
// bounce channel.
//
// Adding a channel: one file (btl/<name>_channel.cc) that implements P2PChannel and
// defines a ChannelKind, and one line in the table in channels.cc.
#ifndef STRATA_BTL_CHANNELS_H
#define STRATA_BTL_CHANNELS_H

#include <memory>
#include <string>

#include "btl/exchange.h"
#include "btl/p2p.h"

namespace strata {

// What a kind decides from: the same on every rank.
struct ChannelFacts {
    int rank, size;
    const strata_transport_t *tp;  // the glue's transport
};

// How a kind connects a team: collective over the team's wire (the transport
// channel), every rank of the team at once.
struct ChannelSetup {
    P2PChannel &wire;
    int tag;        // a tag of the control slot reserved for channel setup
    uint32_t team;  // the team's id, agreed: distinct among this process's teams
    Waiter waiter;
};

struct ChannelKind {
    const char *name;
    const char *description;
    bool in_auto;  // "auto" may choose it (the transport channel only, today)
    // Whether this kind can serve the team on this rank (*why: why not). No message;
    // may start the kind's process-wide state (a UCX context). The answer may differ
    // between ranks: the team agrees on it.
    bool (*can_connect)(const ChannelFacts &facts, std::string *why);
    // A connected channel of this kind (collective: every rank of the team calls it);
    // nullptr and *why on a failure of this rank's own (a peer's failure is found by
    // the agreement that follows, or, for a wait, by the waiter's deadline: *st).
    std::unique_ptr<P2PChannel> (*make)(const ChannelFacts &facts, const ChannelSetup &setup, Status *st,
                                        std::string *why);
};

// The kinds, in order of preference for "auto"; [0] is the transport channel, which
// can always connect.
int channel_kind_count();
const ChannelKind &channel_kind(int index);
// The index of the kind a setting names ("auto", "" or nullptr: -1); -2 when none is named so.
int channel_kind_index(const char *setting);
// The kind this rank would use: the one the setting names if it can connect here,
// or for "auto" the first in the table (in_auto) that can; else 0, and *why says why.
int choose_channel(const char *setting, const ChannelFacts &facts, std::string *why);
// Team ids, for channels that share process-wide state among teams (one UCX worker),
// 1 .. kTeamIds - 1. Setup proposes the largest next_team_id() of the team's ranks;
// each rank claims it (false: a live team of this process holds it, one set up at the
// same time on another thread) and the ranks agree that all of them could, else they
// propose again. A claimed id is released when its team ends, and no two live teams
// of a process hold one.
constexpr uint32_t kTeamIds = 1u << 22;
uint32_t next_team_id();
bool claim_team_id(uint32_t id);
void release_team_id(uint32_t id);

}  // namespace strata

#endif
