package connectors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/provenance"
)

type nopSource struct{}

func (nopSource) Sync(context.Context, ingestd.Pass) error { return nil }

type nopMapper struct{}

func (nopMapper) Map(connectors.Delivery) ([]ingestd.Job, error) { return nil, nil }

func kind(name string, flavors ...connectors.Flavor) connectors.Kind {
	return connectors.Kind{
		Name:   name,
		Policy: provenance.AnyTier("a test kind"),
		New: func(ingestd.Installation, connectors.Settings) (connectors.Connector, error) {
			return connectors.Connector{Source: nopSource{}}, nil
		},
		Flavors: flavors,
	}
}

func flavor(name string, scheme connectors.Scheme) connectors.Flavor {
	return connectors.NewFlavor(name, scheme, func(string, struct{}) (connectors.DeliveryMapper, error) { return nopMapper{}, nil })
}

// TestNewRegistryRefusesFlavors: a flavour without a name, a constructor
// or a scheme this build verifies, or a name two kinds supply, is a
// programming error NewRegistry panics on, naming it.
func TestNewRegistryRefusesFlavors(t *testing.T) {
	tests := []struct {
		name  string
		kinds []connectors.Kind
		want  string
	}{
		{"no name", []connectors.Kind{kind("a", flavor("", connectors.SchemeHubSignature))}, "without a name"},
		{"no constructor", []connectors.Kind{kind("a", connectors.Flavor{Name: "f", Scheme: connectors.SchemeHubSignature})}, "no constructor"},
		{"unknown scheme", []connectors.Kind{kind("a", flavor("f", "hmac-md5"))}, `scheme "hmac-md5"`},
		{"twice", []connectors.Kind{kind("a", flavor("f", connectors.SchemeHubSignature)), kind("b", flavor("f", connectors.SchemeStandardWebhooks))}, `flavour "f" registered twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if err, ok := r.(error); !ok || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("panic = %v, want one naming %s", r, tt.want)
				}
			}()
			connectors.NewRegistry(tt.kinds...)
		})
	}
}

// TestBuildFindsFlavors: Build hands a kind the flavours every registered
// kind supplies, so the kind that accepts deliveries imports none of them.
func TestBuildFindsFlavors(t *testing.T) {
	var found []string
	hooks := kind("hooks")
	hooks.New = func(_ ingestd.Installation, s connectors.Settings) (connectors.Connector, error) {
		for _, n := range []string{"a-flavour", "b-flavour", "none"} {
			if _, ok := s.Flavor(n); ok {
				found = append(found, n)
			}
		}
		return connectors.Connector{Source: nopSource{}}, nil
	}
	reg := connectors.NewRegistry(hooks, kind("a", flavor("a-flavour", connectors.SchemeHubSignature)), kind("b", flavor("b-flavour", connectors.SchemeStandardWebhooks)))
	if _, err := reg.Build(ingestd.Installation{ID: "h", Kind: "hooks", Tier: ingestd.TierTrustedInternal}, connectors.Settings{}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(found, ","), "a-flavour,b-flavour"; got != want {
		t.Errorf("flavours found = %s, want %s", got, want)
	}
	if got, want := strings.Join(reg.FlavorNames(), ","), "a-flavour,b-flavour"; got != want {
		t.Errorf("FlavorNames = %s, want %s", got, want)
	}
}

// TestBuildChecksAbilities: a kind that builds no source, or an intake
// that could not verify or map a delivery, is refused at Build.
func TestBuildChecksAbilities(t *testing.T) {
	tests := []struct {
		name string
		c    connectors.Connector
		want string
	}{
		{"no source", connectors.Connector{}, "built no source"},
		{"intake without a mapper", connectors.Connector{Source: nopSource{}, Intake: &connectors.Intake{Scheme: connectors.SchemeHubSignature, Secrets: [][]byte{[]byte("k")}}}, "intake"},
		{"intake without a secret", connectors.Connector{Source: nopSource{}, Intake: &connectors.Intake{Scheme: connectors.SchemeHubSignature, Mapper: nopMapper{}}}, "intake"},
		{"intake of an unknown scheme", connectors.Connector{Source: nopSource{}, Intake: &connectors.Intake{Scheme: "plain", Secrets: [][]byte{[]byte("k")}, Mapper: nopMapper{}}}, "intake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := kind("k")
			k.New = func(ingestd.Installation, connectors.Settings) (connectors.Connector, error) { return tt.c, nil }
			_, err := connectors.NewRegistry(k).Build(ingestd.Installation{ID: "x", Kind: "k", Tier: ingestd.TierTrustedInternal}, connectors.Settings{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `"x"`) {
				t.Errorf("Build = %v, want an error naming the installation and %s", err, tt.want)
			}
		})
	}
}

// TestNewFlavorHandsTypedKeys: a flavour made by NewFlavor makes its own
// keys for the decoder and gets them back typed, the zero value when the
// block had none; a flavour without keys makes none.
func TestNewFlavorHandsTypedKeys(t *testing.T) {
	type keys struct{ Paths []string }
	var got []keys
	f := connectors.NewFlavor("typed", connectors.SchemeHubSignature, func(_ string, k keys) (connectors.DeliveryMapper, error) {
		got = append(got, k)
		return nopMapper{}, nil
	})
	decoded, ok := f.NewKeys().(*keys)
	if !ok {
		t.Fatalf("NewKeys = %T, want *keys", f.NewKeys())
	}
	decoded.Paths = []string{"docs/**"}
	if _, err := f.Mapper("i", decoded); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Mapper("i", nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Paths) != 1 || got[0].Paths[0] != "docs/**" || got[1].Paths != nil {
		t.Fatalf("mapper got %+v, want the decoded keys, then the zero keys", got)
	}
	none := connectors.NewFlavor("plain", connectors.SchemeHubSignature, func(string, struct{}) (connectors.DeliveryMapper, error) { return nopMapper{}, nil })
	if k := none.NewKeys(); k != nil {
		t.Fatalf("a flavour without keys made %T", k)
	}
}
