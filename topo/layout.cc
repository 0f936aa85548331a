// SPDX-License-Identifier: BSD-3-Clause
// topo/layout.cc - node layout from node keys and the virtual-node size.
#include "topo/layout.h"

#include <algorithm>
#include <map>

namespace strata {

int Layout::max_local_size() const {
    int m = 0;
    for (const auto &node : members) m = std::max(m, static_cast<int>(node.size()));
    return m;
}

std::vector<int> Layout::rail(int j) const {
    std::vector<int> out;
    out.reserve(members.size());
    for (const auto &node : members) out.push_back(node[j % node.size()]);
    return out;
}

Layout make_layout(int rank, const std::vector<int> &node_keys, int node_size) {
    Layout l;
    l.rank = rank;
    l.size = static_cast<int>(node_keys.size());

    // Group by key in order of first appearance, which is the order of lowest rank.
    std::map<int, int> key_to_real;
    std::vector<std::vector<int>> real;
    for (int r = 0; r < l.size; ++r) {
        auto it = key_to_real.find(node_keys[r]);
        if (it == key_to_real.end()) {
            it = key_to_real.emplace(node_keys[r], static_cast<int>(real.size())).first;
            real.emplace_back();
        }
        real[it->second].push_back(r);
    }

    // Split each real node into virtual nodes; a virtual node never spans two
    // real nodes, so shared memory stays valid inside it.
    for (const auto &node : real) {
        const size_t step = node_size > 0 ? static_cast<size_t>(node_size) : node.size();
        for (size_t first = 0; first < node.size(); first += step) {
            const size_t last = std::min(node.size(), first + step);
            l.members.emplace_back(node.begin() + first, node.begin() + last);
        }
    }
    // Order nodes by their lowest rank so that every rank numbers them the same.
    std::sort(l.members.begin(), l.members.end(),
              [](const std::vector<int> &a, const std::vector<int> &b) { return a[0] < b[0]; });

    l.node_of.assign(l.size, -1);
    l.local_of.assign(l.size, -1);
    for (int n = 0; n < l.nnodes(); ++n) {
        for (int i = 0; i < l.local_size(n); ++i) {
            l.node_of[l.members[n][i]] = n;
            l.local_of[l.members[n][i]] = i;
        }
    }
    return l;
}

}  // namespace strata
