package testrestore

import (
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// connectTimeout bounds each new connection to the throwaway server, its
// handshake included. A server that no longer accepts connections (its
// open files exhausted: "Error in accept: Too many open files") leaves the
// client waiting for a handshake that never comes, and the run with it.
var connectTimeout = time.Minute

// boundedConnector is the server's connector, each Connect bounded by
// connectTimeout.
type boundedConnector struct {
	driver.Connector
	s *server
}

var _ driver.Connector = boundedConnector{}

// Connect connects within connectTimeout; a server that did not accept in
// time is this host's failure (no verdict), its error log's end said.
func (c boundedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	bounded, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := c.Connector.Connect(bounded)
	if err != nil && ctx.Err() == nil && bounded.Err() != nil {
		tail := c.s.logTail()
		return nil, unreadable.Host(fmt.Errorf("mysqld did not accept a connection within %v (%v); its error log ends:\n%s", connectTimeout, err, tail),
			cmp.Or(unreadable.InOutput(tail), "the throwaway server stopped accepting connections"))
	}
	return conn, err
}
