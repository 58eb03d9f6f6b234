package loadgen

import "testing"

// TestCheckTarget: bench retrieve loads loopback only, unless told.
func TestCheckTarget(t *testing.T) {
	tests := []struct {
		name        string
		url         string
		allowRemote bool
		wantErr     bool
	}{
		{name: "ipv4 loopback", url: "http://127.0.0.1:7700"},
		{name: "other 127/8", url: "http://127.3.2.1:7700"},
		{name: "ipv6 loopback", url: "http://[::1]:7700"},
		{name: "localhost", url: "https://LOCALHOST:7700/"},
		{name: "private address", url: "http://10.0.0.5:7700", wantErr: true},
		{name: "name", url: "http://ingestd.internal:7700", wantErr: true},
		{name: "all interfaces", url: "http://0.0.0.0:7700", wantErr: true},
		{name: "localhost lookalike", url: "http://localhost.attacker.example:7700", wantErr: true},
		{name: "remote allowed", url: "http://ingestd.internal:7700", allowRemote: true},
		{name: "not http", url: "grpc://127.0.0.1:7700", wantErr: true},
		{name: "no host", url: "http://", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckTarget(tt.url, tt.allowRemote); (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
