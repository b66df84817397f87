"""Pandora on CloudLab: 3 ZooKeeper + failure-detector nodes, N memory nodes,
M compute nodes, all on one experiment LAN (ConnectX NICs).

Instructions: when the experiment is ready, write a node list (see
deploy/cloudlab/nodes.example: role, ssh name, LAN address) and run
`bash deploy/cloudlab/cluster.sh all --nodes FILE --dir DIR` from a checkout
on your own machine (README, "CloudLab").

Nodes are named zk1..zk3, mem1..memN, cn1..cnM and get the LAN addresses
10.10.1.1, 10.10.1.2, ... in that order, so the node list follows from the
parameters alone.

Image: Pandora's scripts target Debian 12 (bookworm): deploy/setup.sh
installs Debian's package names (clang 14, libclang-rt-14-dev, zookeeper
3.8). The default image URN below names a Debian 12 image in emulab-ops; it
could not be checked from the machine this profile was written on. If the
portal reports that it does not exist, pick a Debian 12 image from the
portal's image list. UBUNTU22-64-STD exists but is untested here (its
package names differ).
"""

import geni.portal as portal
import geni.rspec.pg as pg

DEBIAN12 = "urn:publicid:IDN+emulab.net+image+emulab-ops//DEBIAN12-64-STD"

# Experiment-LAN speed of each hardware type's ConnectX port (Gbps), as the
# CloudLab hardware pages list them; the LAN asks for exactly that.
LINK_GBPS = {"r650": 100, "c6525-25g": 25, "c6525-100g": 100}

pc = portal.Context()
pc.defineParameter("node_count", "Nodes in total", portal.ParameterType.INTEGER, 7,
                   longDescription="3 ZooKeeper/failure-detector nodes + memory nodes + compute nodes.")
pc.defineParameter("memory_nodes", "Memory nodes", portal.ParameterType.INTEGER, 2,
                   longDescription="Nodes running pandora-memd; the rest (after the 3 ZooKeeper nodes) "
                                   "run pandora-bench.")
pc.defineParameter("hardware_type", "Hardware type", portal.ParameterType.NODETYPE, "r650",
                   legalValues=[("r650", "r650 (Utah, Intel, ConnectX)"),
                                ("c6525-25g", "c6525-25g (Utah, AMD, ConnectX-5 25 Gb)"),
                                ("c6525-100g", "c6525-100g (Utah, AMD, ConnectX-5 100 Gb)")])
pc.defineParameter("image", "Disk image (Debian 12)", portal.ParameterType.IMAGE, DEBIAN12)
params = pc.bindParameters()

compute_nodes = params.node_count - 3 - params.memory_nodes
if params.memory_nodes < 1:
    pc.reportError(portal.ParameterError("At least one memory node is needed.", ["memory_nodes"]))
if compute_nodes < 2:
    # One compute node is crashed by the fail-over experiment; one survivor
    # at least must be left to measure.
    pc.reportError(portal.ParameterError(
        "Nodes in total must leave at least 2 compute nodes after 3 ZooKeeper nodes and the memory nodes.",
        ["node_count", "memory_nodes"]))
if params.node_count > 250:
    pc.reportError(portal.ParameterError("At most 250 nodes (one /24 LAN).", ["node_count"]))
pc.verifyParameters()

request = pc.makeRequestRSpec()
lan = request.LAN("lan")
lan.bandwidth = LINK_GBPS[params.hardware_type] * 1000 * 1000  # geni-lib takes kbps

names = (["zk%d" % i for i in range(1, 4)] +
         ["mem%d" % i for i in range(1, params.memory_nodes + 1)] +
         ["cn%d" % i for i in range(1, compute_nodes + 1)])
for k, name in enumerate(names):
    node = request.RawPC(name)
    node.hardware_type = params.hardware_type
    node.disk_image = params.image
    iface = node.addInterface("if1")
    iface.addAddress(pg.IPv4Address("10.10.1.%d" % (k + 1), "255.255.255.0"))
    lan.addInterface(iface)

pc.printRequestRSpec(request)
