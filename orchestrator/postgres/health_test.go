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

// TestFromServer: a network error on the database's own socket or port is the database's; one on
// another address is not.
func TestFromServer(t *testing.T) {
	reset := func(addr net.Addr) error {
		return fmt.Errorf("get run r: %w", &net.OpError{Op: "read", Addr: addr, Err: errors.New("connection reset by peer")})
	}
	sock := &net.UnixAddr{Name: "/data/postgres/.s.PGSQL.5432", Net: "unix"}
	db := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 5432}
	other := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443}
	for _, c := range []struct {
		err  error
		host string
		port uint16
		want bool
	}{
		{reset(sock), "/data/postgres", 5432, true},
		{reset(other), "/data/postgres", 5432, false},
		{reset(db), "db.internal", 5432, true},
		{reset(other), "db.internal", 5432, false},
		{errors.New("plain"), "/data/postgres", 5432, false},
	} {
		if got := fromServer(c.err, c.host, c.port); got != c.want {
			t.Errorf("fromServer(%v, %s, %d) = %v, want %v", c.err, c.host, c.port, got, c.want)
		}
	}
}
