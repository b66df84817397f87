# A stand-in for geni-lib, only for deploy/cloudlab/test/dry_run_test.sh:
# geni-lib cannot be installed on the machines that run the tests. It has
# just the calls profile.py makes, and prints the request as plain lines
# instead of an RSpec so the test can check names, addresses and the LAN.
