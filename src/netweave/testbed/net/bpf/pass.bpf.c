// SPDX-License-Identifier: GPL-2.0
/* Lets a host's veth take frames that a switch's XDP program redirects to it (a devmap broadcast of
 * RESULTs): veth delivers redirected frames only to a peer with an XDP program of its own. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int pass(struct xdp_md *ctx)
{
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
