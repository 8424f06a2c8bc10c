package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// TestConnectionLost: pgx's lost and refused connections and a server going down count as the
// database's outage; a statement's own fault and another service's network error do not.
func TestConnectionLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{fmt.Errorf("get run r: %w", &pgconn.PgError{Code: "23505"}), false},
		{fmt.Errorf("list calls: %w", puddle.ErrClosedPool), true},
		{fmt.Errorf("get run r: failed to receive message: %w", io.ErrUnexpectedEOF), true},
		{errors.New("failed to connect to `user=postgres database=guilds`: dial error"), true},
		{errors.New("get run r: write failed: write unix @->/x/.s.PGSQL.5432: write: broken pipe"), true},
		{fmt.Errorf("call the MCP server: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), false},
		{fmt.Errorf("provider: %w", io.ErrUnexpectedEOF), false},
		{errors.New("something else"), false},
	} {
		if got := connectionLost(c.err); got != c.lost {
			t.Errorf("connectionLost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
