// SPDX-License-Identifier: BSD-3-Clause
// test/unit/layout_test.cc - node layout, virtual nodes and rails.
#include <gtest/gtest.h>

#include "topo/layout.h"

using strata::Layout;
using strata::make_layout;

TEST(Layout, RealNodesOrderedByLowestRank) {
    // Ranks interleaved over two hosts: keys are the lowest rank of each host.
    const Layout l = make_layout(3, {0, 1, 0, 1, 0}, 0);
    ASSERT_EQ(l.nnodes(), 2);
    EXPECT_EQ(l.members[0], (std::vector<int>{0, 2, 4}));
    EXPECT_EQ(l.members[1], (std::vector<int>{1, 3}));
    EXPECT_EQ(l.my_node(), 1);
    EXPECT_EQ(l.my_local(), 1);
    EXPECT_EQ(l.max_local_size(), 3);
}

TEST(Layout, VirtualNodesSplitEachRealNode) {
    const Layout l = make_layout(0, {7, 7, 7, 7, 7}, 2);
    ASSERT_EQ(l.nnodes(), 3);
    EXPECT_EQ(l.members[2], (std::vector<int>{4}));
    // A virtual node never spans two real nodes.
    const Layout m = make_layout(0, {0, 0, 0, 3, 3, 3}, 2);
    ASSERT_EQ(m.nnodes(), 4);
    EXPECT_EQ(m.members[1], (std::vector<int>{2}));
    EXPECT_EQ(m.members[2], (std::vector<int>{3, 4}));
}

TEST(Layout, NodeSizeOneMakesEveryRankANode) {
    const Layout l = make_layout(2, {0, 0, 0, 0}, 1);
    EXPECT_EQ(l.nnodes(), 4);
    EXPECT_EQ(l.my_node(), 2);
    EXPECT_EQ(l.my_local_size(), 1);
}

TEST(Layout, RailsCoverSmallerNodes) {
    // Nodes of 3, 1 and 2 ranks: rail j takes local j % L(n) on each node.
    const Layout l = make_layout(0, {0, 0, 0, 3, 4, 4}, 0);
    EXPECT_EQ(l.rail(0), (std::vector<int>{0, 3, 4}));
    EXPECT_EQ(l.rail(1), (std::vector<int>{1, 3, 5}));
    EXPECT_EQ(l.rail(2), (std::vector<int>{2, 3, 4}));
}

TEST(Layout, SameOnEveryRank) {
    const std::vector<int> keys{0, 1, 1, 0, 2, 2, 2};
    const Layout a = make_layout(0, keys, 2), b = make_layout(6, keys, 2);
    EXPECT_EQ(a.members, b.members);
    EXPECT_EQ(a.node_of, b.node_of);
}
