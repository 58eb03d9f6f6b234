# Dovecot IMAP server for the IMAP connector's integration tests
# (connectors/imap/dovecot_test.go). Sourced by .ci/services; exports the
# variable that switches the tests on. The tests start their own dovecot
# with a config in a temp dir, so the system service apt may start is
# stopped and disabled: it would hold ports 143/993 and is not used.
if ! command -v dovecot >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd >/dev/null
fi
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now dovecot >/dev/null 2>&1 || true
fi
if command -v service >/dev/null 2>&1; then
  service dovecot stop >/dev/null 2>&1 || true
fi
dovecot --version
export INGESTD_TEST_DOVECOT="$(command -v dovecot)"
