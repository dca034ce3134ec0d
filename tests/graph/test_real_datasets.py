"""Every real dataset in ../shared/data loads with the counts its README reports."""

import numpy as np
import pytest

from netweave.graph import load_dataset


@pytest.mark.parametrize("spec, nodes, edges, dim, classes", [
    ("planetoid:{d}/planetoid:cora", 2708, 5278, 1433, 7),
    ("planetoid:{d}/planetoid:citeseer", 3327, 4552, 3703, 6),
    ("planetoid:{d}/planetoid:pubmed", 19717, 44324, 500, 3),
    ("{d}/gnn_benchmark_npz/amazon_cs.npz", 13752, 245861, 767, 10),
    ("npz:{d}/gnn_benchmark_npz/amazon_photo.npz", 7650, 119081, 745, 8),
    ("{d}/gnn_benchmark_npz/coauthor_phy.npz", 34493, 247962, 8415, 5),
    ("{d}/gnn_benchmark_npz/flickr.npz", 7575, 239738, 12047, 9),
    ("{d}/snap/email-Enron.txt.gz", 36692, 183831, 0, 0),
    ("snap:{d}/snap/wiki-Vote.txt.gz", 7115, 100762, 0, 0),
    # README: 582,533 "undirected" pairs include the 78,303 self-loop pairs, which netweave drops.
    ("{d}/snap/soc-Slashdot0902.txt.gz", 82168, 582533 - 78303, 0, 0),
    ("{d}/snap/p2p-Gnutella31.gstest.e.gz", 62586, 147892, 0, 0),
    ("musae:{d}/musae/facebook", 22470, 171002 - 179, 4714, 4),
    ("{d}/musae/twitch_DE", 9498, 153138, 3170, 2),
    ("{d}/musae/chameleon", 2277, 31421 - 50, 3132, 5),
])
def test_real_dataset_counts(shared, spec, nodes, edges, dim, classes):
    g = load_dataset(spec.format(d=shared))
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (nodes, edges, dim, classes)
    assert g.indptr[-1] == 2 * edges


def test_ego_twitter_from_sharded_csv(shared):
    g = load_dataset(f"snap:{shared}/ego_twitter_gstest/twitter_e_*.csv.gz")
    assert (g.num_nodes, g.num_edges) == (81306, 1342296)


def test_bundled_cora_equals_planetoid_files(shared):
    a = load_dataset("cora")
    b = load_dataset(f"planetoid:{shared}/planetoid:cora")
    for key in ("indptr", "indices", "labels", "train_mask", "val_mask", "test_mask"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    assert np.array_equal(a.dense_features(), b.dense_features())


def test_warnings_for_filled_rows(shared, capsys):
    load_dataset(f"planetoid:{shared}/planetoid:pubmed")
    load_dataset(f"planetoid:{shared}/planetoid:citeseer")
    load_dataset(f"{shared}/musae/github")
    err = capsys.readouterr().err
    assert "ind.pubmed.allx is missing" in err and "15 test ids" in err and "no node features" in err
