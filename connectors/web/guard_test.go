package web

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		name    string
		host    string
		want    string // "" for a host name
		wantErr bool
	}{
		{name: "dotted", host: "127.0.0.1", want: "127.0.0.1"},
		{name: "decimal", host: "2130706433", want: "127.0.0.1"},
		{name: "octal", host: "0177.0.0.1", want: "127.0.0.1"},
		{name: "hex short", host: "0x7f.1", want: "127.0.0.1"},
		{name: "hex whole", host: "0x7f000001", want: "127.0.0.1"},
		{name: "short", host: "127.1", want: "127.0.0.1"},
		{name: "three parts", host: "10.1.258", want: "10.1.1.2"},
		{name: "trailing dot", host: "127.0.0.1.", want: "127.0.0.1"},
		{name: "mixed", host: "0xA9.0376.43518", want: "169.254.169.254"},
		{name: "upper hex", host: "0X7F.0.0.1", want: "127.0.0.1"},
		{name: "bracketed v6", host: "[::1]", want: "::1"},
		{name: "bare v6", host: "::ffff:127.0.0.1", want: "::ffff:127.0.0.1"},
		{name: "fullwidth digits", host: "\uff11\uff12\uff17.\uff10.\uff10.\uff11", want: "127.0.0.1"},
		{name: "ideographic dots", host: "127\u30020\u30020\u30021", want: "127.0.0.1"},
		{name: "name", host: "example.com"},
		{name: "name with digits", host: "1.example.com"},
		{name: "hexish name", host: "0x7f.example"},
		{name: "over 255", host: "256.0.0.1", wantErr: true},
		{name: "last part too big", host: "1.2.3.256", wantErr: true},
		{name: "bad octal", host: "08.0.0.1", wantErr: true},
		{name: "five parts", host: "1.2.3.4.5", wantErr: true},
		{name: "empty part", host: "1..2.3", wantErr: true},
		{name: "too large decimal", host: "4294967296", wantErr: true},
		{name: "zone", host: "[fe80::1%25eth0]", wantErr: true},
		{name: "empty", host: "", wantErr: true},
		{name: "numeric last label", host: "example.123", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, isIP, err := ParseHost(tt.host)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseHost(%q) error = %v, wantErr %v", tt.host, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got, want := isIP, tt.want != ""; got != want {
				t.Fatalf("ParseHost(%q) isIP = %v, want %v (addr %v)", tt.host, got, want, addr)
			}
			if isIP && addr.String() != tt.want {
				t.Errorf("ParseHost(%q) = %v, want %v", tt.host, addr, tt.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		addr string
		rule string // "" for public
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "link-local"},
		{"100.64.0.1", "cgnat"},
		{"100.128.0.1", ""},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"192.0.2.10", "documentation"},
		{"2001:db8::1", "documentation"},
		{"fd00::1", "private"},
		{"fe80::1", "link-local"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::127.0.0.1", "loopback"},
		{"64:ff9b::a9fe:a9fe", "link-local"},
		{"2002:7f00:1::", "loopback"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"}, // Teredo client 127.0.0.1
		{"4000::1", "reserved"},
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"::ffff:8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"2002:0808:0808::1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			rule, what := Classify(netip.MustParseAddr(tt.addr))
			if rule != tt.rule {
				t.Errorf("Classify(%s) = %q (%s), want %q", tt.addr, rule, what, tt.rule)
			}
		})
	}
}

// TestGuardRefuses is the SSRF table: every URL is refused, and the error
// names the rule that fired.
func TestGuardRefuses(t *testing.T) {
	// A "public" host whose server (really on loopback, reached through
	// the guard's test dial hook once its public address has passed the
	// checks) redirects to private targets.
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-internal":
			http.Redirect(w, r, "http://internal.example/admin", http.StatusFound)
		case "/to-loopback":
			http.Redirect(w, r, "http://127.0.0.1/admin", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://0xA9FEA9FE/latest/meta-data/", http.StatusMovedPermanently)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer redirector.Close()

	resolver := mapResolver{
		"rebind.example":   {netip.MustParseAddr("127.0.0.1")},
		"mixed.example":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")},
		"internal.example": {netip.MustParseAddr("10.0.0.1")},
		"mapped.example":   {netip.MustParseAddr("::ffff:192.168.0.1")},
		"public.example":   {netip.MustParseAddr("93.184.216.34")},
	}
	src := MustSource(t, ingestd.TierUntrustedExternal, Config{URLs: []string{"https://public.example/"}}, resolver)
	src.guard.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, redirector.Listener.Addr().String())
	}

	tests := []struct {
		name     string
		url      string
		wantRule string
		wantMsg  string
	}{
		{name: "loopback v4", url: "http://127.0.0.1/", wantRule: "loopback", wantMsg: "127.0.0.1 is loopback (allow_private_networks is off)"},
		{name: "loopback v6", url: "http://[::1]/", wantRule: "loopback", wantMsg: "::1 is loopback"},
		{name: "metadata", url: "http://169.254.169.254/latest/meta-data/", wantRule: "link-local", wantMsg: "cloud metadata"},
		{name: "rfc1918", url: "http://10.0.0.1/", wantRule: "private", wantMsg: "10.0.0.1 is private"},
		{name: "decimal", url: "http://2130706433/", wantRule: "loopback", wantMsg: "2130706433 (the address 127.0.0.1) is loopback"},
		{name: "hex", url: "http://0x7f.1/", wantRule: "loopback", wantMsg: "0x7f.1 (the address 127.0.0.1) is loopback"},
		{name: "octal", url: "http://0177.0.0.1/", wantRule: "loopback"},
		{name: "short", url: "http://127.1/", wantRule: "loopback"},
		{name: "ipv4-mapped", url: "http://[::ffff:127.0.0.1]/", wantRule: "loopback", wantMsg: "IPv4-mapped form of 127.0.0.1, which is loopback"},
		{name: "cgnat", url: "http://100.64.1.1/", wantRule: "cgnat"},
		{name: "unspecified", url: "http://0.0.0.0:8080/", wantRule: "unspecified"},
		{name: "ula", url: "http://[fd12::1]/", wantRule: "private"},
		{name: "name resolving to loopback", url: "http://rebind.example/", wantRule: "loopback", wantMsg: "rebind.example resolves to 127.0.0.1, which is loopback"},
		{name: "name with one private address", url: "http://mixed.example/", wantRule: "private", wantMsg: "mixed.example resolves to 10.1.2.3"},
		{name: "name resolving to mapped private", url: "http://mapped.example/", wantRule: "private", wantMsg: "192.168.0.1"},
		{name: "redirect to private name", url: "http://public.example/to-internal", wantRule: "private", wantMsg: "internal.example resolves to 10.0.0.1, which is private"},
		{name: "redirect to loopback literal", url: "http://public.example/to-loopback", wantRule: "loopback"},
		{name: "redirect to hex metadata", url: "http://public.example/to-metadata", wantRule: "link-local"},
		{name: "redirect to file", url: "http://public.example/to-file", wantRule: "scheme"},
		{name: "file", url: "file:///etc/passwd", wantRule: "scheme", wantMsg: `scheme "file" is not http or https`},
		{name: "gopher", url: "gopher://x/1", wantRule: "scheme"},
		{name: "no scheme", url: "//127.0.0.1/", wantRule: "scheme"},
		{name: "credentials", url: "http://user:pw@public.example/", wantRule: "credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := src.Fetch(context.Background(), tt.url)
			re, ok := IsRefused(err)
			if !ok {
				t.Fatalf("Fetch(%s) error = %v, want a refusal by rule %q", tt.url, err, tt.wantRule)
			}
			if re.Rule != tt.wantRule {
				t.Errorf("Fetch(%s) refused by rule %q (%v), want %q", tt.url, re.Rule, re, tt.wantRule)
			}
			if !strings.HasPrefix(re.Error(), "refused: ") || !strings.Contains(re.Error(), tt.wantMsg) {
				t.Errorf("Fetch(%s) error %q, want it to contain %q", tt.url, re.Error(), tt.wantMsg)
			}
			if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
				t.Errorf("ErrorCode = %q, want %q", got, ingestd.EINVALID)
			}
		})
	}

	t.Run("redirect loop stops at 5", func(t *testing.T) {
		_, err := src.Fetch(context.Background(), "http://public.example/loop")
		if err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
			t.Fatalf("Fetch error = %v, want a redirect limit", err)
		}
	})
}

// TestGuardControl checks the socket-level check that stands behind every
// dial, whatever chose the address.
func TestGuardControl(t *testing.T) {
	g := &Guard{}
	if err := g.control("tcp4", "127.0.0.1:80", nil); err == nil {
		t.Fatal("control let a loopback connect through")
	}
	if err := g.control("tcp6", "[::ffff:169.254.169.254]:80", nil); err == nil {
		t.Fatal("control let a mapped metadata connect through")
	}
	if err := g.control("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("control refused a public address: %v", err)
	}
	allow := &Guard{AllowPrivate: true}
	if err := allow.control("tcp4", "127.0.0.1:80", nil); err != nil {
		t.Fatalf("allow_private_networks did not lift the rule: %v", err)
	}
}

// TestGuardAllowPrivate: the flag lifts the address rules, never the
// scheme rule.
func TestGuardAllowPrivate(t *testing.T) {
	g := &Guard{AllowPrivate: true}
	if err := g.CheckURL(mustURL(t, "http://127.0.0.1/")); err != nil {
		t.Errorf("CheckURL(loopback) with allow_private_networks = %v", err)
	}
	if err := g.CheckURL(mustURL(t, "file:///etc/passwd")); err == nil {
		t.Error("allow_private_networks let file:// through")
	}
}

// TestNewRefusesConfig: a configured URL the guard refuses without
// resolving it is a configuration error.
func TestNewRefusesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "file url", cfg: Config{URLs: []string{"file:///etc/passwd"}}},
		{name: "loopback literal", cfg: Config{URLs: []string{"http://127.0.0.1/"}}},
		{name: "no urls", cfg: Config{}},
		{name: "bad rate", cfg: Config{URLs: []string{"https://example.com/"}, RatePerHost: "fast"}},
		{name: "bad glob", cfg: Config{URLs: []string{"https://example.com/"}, Crawl: CrawlConfig{Include: []string{"/a/[b"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSource(ingestd.Installation{ID: "x", Kind: "url", Tier: ingestd.TierTrustedInternal}, Options{Config: tt.cfg})
			if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
				t.Fatalf("NewSource error = %v (code %q), want EINVALID", err, got)
			}
		})
	}
}

// TestFetchOffSite: a trusted installation does not take pages from
// outside its sites at run time.
func TestFetchOffSite(t *testing.T) {
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{"https://docs.example.com/"}}, mapResolver{})
	_, err := src.Fetch(context.Background(), "https://elsewhere.example.org/page")
	if got := ingestd.ErrorCode(err); got != ingestd.EINVALID || !strings.Contains(err.Error(), "not on a site") {
		t.Fatalf("Fetch off-site error = %v, want EINVALID naming the sites", err)
	}
}

func mustURL(tb testing.TB, s string) *url.URL {
	tb.Helper()
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// FuzzParseHost: ParseHost never panics, and an address it reads that the
// guard lets through is not in any refused range by netip's own account.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]",
		"example.com", "0xA9.0376.43518", "[fe80::1%25en0]", "\uff11\uff12\uff17.0.0.1", "1.2.3.4.", "0x", "::ffff:10.0.0.1",
		"[2002:7f00:1::]", "[64:ff9b::7f00:1]", "[2001:0:4136:e378:8000:63bf:80ff:fffe]"} {
		f.Add(s)
	}
	g := &Guard{}
	f.Fuzz(func(t *testing.T, host string) {
		addr, isIP, err := ParseHost(host)
		if err != nil || !isIP {
			return
		}
		if !addr.IsValid() {
			t.Fatalf("ParseHost(%q) accepted an invalid address", host)
		}
		if g.CheckAddr(addr) != nil {
			return
		}
		for _, a := range []netip.Addr{addr, addr.Unmap()} {
			if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
				a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast() {
				t.Fatalf("ParseHost(%q) = %v passed the guard but is not public", host, a)
			}
			if a.Is4() {
				b := a.As4()
				if b[0] == 100 && b[1]&0xc0 == 64 || b[0] == 169 && b[1] == 254 || b[0] == 0 || b[0] >= 224 {
					t.Fatalf("ParseHost(%q) = %v passed the guard but is in a refused IPv4 range", host, a)
				}
			}
		}
		// The URL form of the same host is checked the same way.
		u := &url.URL{Scheme: "http", Host: host, Path: "/"}
		if addr.Is6() && !strings.HasPrefix(host, "[") {
			u.Host = "[" + host + "]"
		}
		if pu, perr := url.Parse(u.String()); perr == nil && pu.Hostname() == strings.Trim(u.Host, "[]") {
			if err := g.CheckURL(pu); err != nil {
				if re, ok := IsRefused(err); ok && re.Rule != "host" && re.Rule != "scheme" && re.Rule != "credentials" {
					t.Fatalf("CheckURL(%s) refused %v by address rule %q after CheckAddr allowed it", pu, addr, re.Rule)
				}
			}
		}
	})
}
