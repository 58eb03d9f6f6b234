// Package jobstest forms NATS JetStream clusters of in-process servers on
// loopback for tests: real servers with real Raft elections, no binary to
// install, so a test can take a node away and watch what the job queue
// does.
package jobstest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// User and Password are what every node of a Cluster requires of clients.
const (
	User     = "ingestd"
	Password = "in-process-cluster-password"
)

// Cluster is three in-process nats-servers routed to each other
// (cluster name "ingestd", nodes "node-1" to "node-3"), each storing
// JetStream in its own temp dir, which survives a Stop and Start.
type Cluster struct {
	opts []*server.Options
	srvs []*server.Server
}

// MustCluster prepares a three-node cluster and starts the nodes whose
// indexes (0 to 2) are given; the others wait for Start. Every node is
// shut down when the test ends.
func MustCluster(tb testing.TB, start ...int) *Cluster {
	tb.Helper()
	c := &Cluster{}
	routePorts := make([]int, 3)
	for i := range routePorts {
		routePorts[i] = FreePort(tb)
	}
	for i := range 3 {
		var routes []string
		for j, p := range routePorts {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
			}
		}
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("node-%d", i+1),
			Host:       "127.0.0.1",
			Port:       FreePort(tb),
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			Username:   User,
			Password:   Password,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "ingestd", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		})
		c.srvs = append(c.srvs, nil)
	}
	tb.Cleanup(func() {
		for i := range c.srvs {
			c.Stop(i)
		}
	})
	for _, i := range start {
		c.Start(tb, i)
	}
	return c
}

// Start starts node i and waits until it accepts clients.
func (c *Cluster) Start(tb testing.TB, i int) {
	tb.Helper()
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		tb.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatalf("node-%d not ready after 10s", i+1)
	}
	c.srvs[i] = s
}

// Stop shuts node i down (a no-op when it is not running).
func (c *Cluster) Stop(i int) {
	if s := c.srvs[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.srvs[i] = nil
	}
}

// URL lists every node, running or not, as a deployment's nats.url does.
func (c *Cluster) URL() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

// Node returns the index of the running node named name, or -1.
func (c *Cluster) Node(name string) int {
	for i, s := range c.srvs {
		if s != nil && s.Name() == name {
			return i
		}
	}
	return -1
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
