# NATS server for the multi-process JetStream tests (jobs/multiproc_test.go):
# the tests start their own server on a free loopback port.
ci_apt_install nats-server
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now nats-server >/dev/null 2>&1 || true
fi
nats-server --version
export INGESTD_TEST_NATS_SERVER="$(command -v nats-server)"
required_vars+=(INGESTD_TEST_NATS_SERVER)
