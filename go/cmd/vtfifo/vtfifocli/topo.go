package vtfifocli

// The topology servers ls's fleet view reads (--topo-implementation), as
// Vitess's binaries link them.
import (
	_ "vitess.io/vitess/go/vt/topo/consultopo"
	_ "vitess.io/vitess/go/vt/topo/etcd2topo"
	_ "vitess.io/vitess/go/vt/topo/zk2topo"
)
