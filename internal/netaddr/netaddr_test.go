package netaddr

import (
	"net"
	"testing"
)

// TestDialAndListening: a wildcard listen address is dialled on
// loopback, and Listening sees a listener there and none once it closes.
func TestDialAndListening(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:7700": "127.0.0.1:7700", ":7700": "127.0.0.1:7700", "[::]:7700": "[::1]:7700",
		"10.0.0.5:7700": "10.0.0.5:7700", "not an address": "not an address",
	} {
		if got := Dial(in); got != want {
			t.Errorf("Dial(%q) = %q, want %q", in, got, want)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if !Listening(addr) {
		t.Errorf("Listening(%s) = false with a listener there", addr)
	}
	l.Close()
	if Listening(addr) {
		t.Errorf("Listening(%s) = true after the listener closed", addr)
	}
}

// TestCheckPort: host:port with a port of 0..65535.
func TestCheckPort(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, ":65535": true, "h:65536": false, "h:x": false, "7700": false} {
		if err := CheckPort(addr); (err == nil) != ok {
			t.Errorf("CheckPort(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}
