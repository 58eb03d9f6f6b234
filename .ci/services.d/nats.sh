# NATS server for the multi-process JetStream tests (jobs/multiproc_test.go)
# and the failover test (jobs/failover_test.go), which routes three of them
# into a JetStream cluster on loopback: the tests start their own servers
# on free ports, so the system service apt may start is stopped.
ci_apt_install nats-server
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now nats-server >/dev/null 2>&1 || true
fi
nats-server --version
if ! nats-server --help 2>&1 | grep -q -- '--cluster_name'; then
  echo "this nats-server cannot form a cluster (no --cluster_name): the failover test needs one" >&2
  exit 1
fi
export INGESTD_TEST_NATS_SERVER="$(command -v nats-server)"
required_vars+=(INGESTD_TEST_NATS_SERVER)
