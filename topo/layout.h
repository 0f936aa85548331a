/* SPDX-License-Identifier: BSD-3-Clause */
// topo/layout.h - who is on which node: node index, local index, rails.
//
// A layout is computed identically on every rank from the same inputs (every
// rank's node key, plus the virtual-node size), so every rank agrees on it.
#ifndef STRATA_TOPO_LAYOUT_H
#define STRATA_TOPO_LAYOUT_H

#include <vector>

namespace strata {

struct Layout {
    int rank = 0;
    int size = 0;
    std::vector<int> node_of;               // rank -> node index, nodes ordered by lowest rank
    std::vector<int> local_of;              // rank -> index among its node's ranks
    std::vector<std::vector<int>> members;  // node -> its ranks, ascending

    int nnodes() const { return static_cast<int>(members.size()); }
    int my_node() const { return node_of[rank]; }
    int my_local() const { return local_of[rank]; }
    int local_size(int node) const { return static_cast<int>(members[node].size()); }
    int my_local_size() const { return local_size(my_node()); }
    int max_local_size() const;
    int rank_at(int node, int local) const { return members[node][local]; }

    // The rail of local index j: on every node n, the rank with local index j % L(n),
    // so that nodes with fewer ranks still contribute to every rail. Ordered by node.
    std::vector<int> rail(int j) const;
};

// node_keys[r] is equal for ranks that share a (real) node and differs otherwise.
// node_size > 0 splits every node into virtual nodes of node_size consecutive ranks
// (by local index), the last one possibly smaller; 0 keeps the real layout.
Layout make_layout(int rank, const std::vector<int> &node_keys, int node_size);

}  // namespace strata

#endif
