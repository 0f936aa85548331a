// SPDX-License-Identifier: BSD-3-Clause
// btl/channels.cc - the registry of point-to-point channel kinds (see channels.h).
#include "btl/channels.h"

#include <cstring>
#include <mutex>
#include <set>

namespace strata {

namespace {

bool transport_can_connect(const ChannelFacts &, std::string *) { return true; }

std::unique_ptr<P2PChannel> transport_make(const ChannelFacts &f, const ChannelSetup &, Status *, std::string *) {
    return std::unique_ptr<P2PChannel>(new TransportChannel(*f.tp));
}

const ChannelKind kTransportKind = {"transport", "the glue's transport (Open MPI: the PML on the communicator)",
                                    true, transport_can_connect, transport_make};

std::mutex g_ids_mu;
std::set<uint32_t> g_live_ids;  // claimed by live teams
uint32_t g_next_id = 1;         // ids are taken in order, wrapping at kTeamIds

uint32_t after(uint32_t id) { return id + 1 < kTeamIds ? id + 1 : 1; }

}  // namespace

#ifdef STRATA_HAVE_UCX
extern const ChannelKind kUcxChannelKind;  // btl/ucx_channel.cc
#endif

// The table: one line per kind, [0] the transport channel.
static const ChannelKind *const kKinds[] = {
    &kTransportKind,
#ifdef STRATA_HAVE_UCX
    &kUcxChannelKind,
#endif
};

int channel_kind_count() { return int(sizeof kKinds / sizeof kKinds[0]); }

const ChannelKind &channel_kind(int index) { return *kKinds[index]; }

int channel_kind_index(const char *setting) {
    if (setting == nullptr || setting[0] == '\0' || strcmp(setting, "auto") == 0) return -1;
    for (int i = 0; i < channel_kind_count(); ++i)
        if (strcmp(setting, kKinds[i]->name) == 0) return i;
    return -2;
}

int choose_channel(const char *setting, const ChannelFacts &facts, std::string *why) {
    const int named = channel_kind_index(setting);
    if (named == -2) {
        *why = std::string("coll_strata_p2p_channel=") + setting + " names no channel built into this strata";
        return 0;
    }
    if (named >= 0) {
        std::string not_here;
        if (kKinds[named]->can_connect(facts, &not_here)) return named;
        *why = std::string("the ") + kKinds[named]->name + " channel cannot connect on rank " +
               std::to_string(facts.rank) + ": " + not_here;
        return 0;
    }
    for (int i = 1; i < channel_kind_count(); ++i)
        if (kKinds[i]->in_auto && kKinds[i]->can_connect(facts, why)) return i;
    why->clear();
    return 0;
}

uint32_t next_team_id() {
    std::lock_guard<std::mutex> g(g_ids_mu);
    uint32_t id = g_next_id;
    while (g_live_ids.count(id) && g_live_ids.size() < kTeamIds - 1) id = after(id);
    return id;
}

bool claim_team_id(uint32_t id) {
    std::lock_guard<std::mutex> g(g_ids_mu);
    if (id == 0 || id >= kTeamIds || !g_live_ids.insert(id).second) return false;
    g_next_id = after(id);
    return true;
}

void release_team_id(uint32_t id) {
    std::lock_guard<std::mutex> g(g_ids_mu);
    g_live_ids.erase(id);
}

}  // namespace strata
