"""Stub of geni.rspec.pg (see ../__init__.py): nodes, interfaces, one LAN."""


class IPv4Address:
    def __init__(self, address, netmask):
        self.address, self.netmask = address, netmask


class Interface:
    def __init__(self, node):
        self.node, self.addresses = node, []

    def addAddress(self, address):
        self.addresses.append(address)


class RawPC:
    def __init__(self, name):
        self.name, self.hardware_type, self.disk_image, self.interfaces = name, None, None, []

    def addInterface(self, name):
        self.interfaces.append(Interface(self))
        return self.interfaces[-1]


class LAN:
    def __init__(self, name):
        self.name, self.bandwidth, self.interfaces = name, None, []

    def addInterface(self, iface):
        self.interfaces.append(iface)


class Request:
    def __init__(self):
        self.resources = []

    def RawPC(self, name):
        self.resources.append(RawPC(name))
        return self.resources[-1]

    def LAN(self, name):
        self.resources.append(LAN(name))
        return self.resources[-1]

    def write(self, out):
        for r in self.resources:
            if isinstance(r, LAN):
                members = " ".join(i.node.name for i in r.interfaces)
                out.write("lan %s bandwidth_kbps=%s members=%s\n" % (r.name, r.bandwidth, members))
            else:
                addrs = " ".join(a.address for i in r.interfaces for a in i.addresses)
                out.write("node %s type=%s image=%s address=%s\n" % (r.name, r.hardware_type, r.disk_image, addrs))
