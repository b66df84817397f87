"""Stub of geni.portal (see __init__.py): the calls profile.py makes."""
import argparse
import sys


class ParameterType:
    INTEGER, STRING, BOOLEAN, IMAGE, NODETYPE = "integer", "string", "boolean", "image", "nodetype"


class ParameterError(Exception):
    def __init__(self, message, params):
        super().__init__("%s (%s)" % (message, ", ".join(params)))


class Context:
    def __init__(self):
        self.params, self.errors = {}, []

    def defineParameter(self, name, description, type, default, legalValues=None, **_):
        legal = [v[0] if isinstance(v, tuple) else v for v in legalValues] if legalValues else None
        self.params[name] = (int if type == ParameterType.INTEGER else str, default, legal)

    def bindParameters(self):  # like geni-lib standalone: --name value on the command line
        ap = argparse.ArgumentParser()
        for name, (conv, default, legal) in self.params.items():
            ap.add_argument("--" + name, type=conv, default=default, choices=legal)
        return ap.parse_args()

    def reportError(self, err):
        self.errors.append(err)

    def verifyParameters(self):
        if self.errors:
            sys.exit("profile error: " + "; ".join(str(e) for e in self.errors))

    def makeRequestRSpec(self):
        import geni.rspec.pg as pg
        return pg.Request()

    def printRequestRSpec(self, request):
        request.write(sys.stdout)
