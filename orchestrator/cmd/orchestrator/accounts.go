package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator/config"
	"golang.org/x/term"
)

const accountsUsage = `usage: orchestrator accounts create --email ADDRESS --name NAME [--admin] [--password-stdin]

Creates an operator account through the running orchestrator's API (GUILDS_LISTEN), authorised by
the bootstrap token: GUILDS_ADMIN_TOKEN from the environment or .env, else the one make run keeps in
GUILDS_DATA_DIR/admin-token. The password is asked for without echo (or read as one line from
standard input with --password-stdin); --admin makes the account an instance admin. Then sign in at
the orchestrator's address.
`

// accounts runs `orchestrator accounts …`: a client of the running server's API.
func accounts(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stderr, accountsUsage)
		return 2
	}
	fs := flag.NewFlagSet("accounts create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "the account's email address")
	name := fs.String("name", "", "the account's display name")
	admin := fs.Bool("admin", false, "make the account an instance admin")
	fromStdin := fs.Bool("password-stdin", false, "read the password as one line from standard input")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *email == "" || *name == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, accountsUsage)
		return 2
	}
	token, err := bootstrapToken(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "orchestrator: %v\n", err)
		return 1
	}
	pw, err := readPassword(stdin, stderr, *fromStdin)
	if err != nil {
		fmt.Fprintf(stderr, "orchestrator: read the password: %v\n", err)
		return 1
	}
	body, _ := json.Marshal(map[string]any{"email": *email, "name": *name, "password": pw, "instance_admin": *admin})
	base := "http://" + cfg.Listen
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/accounts", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "orchestrator: %v\n", err)
		return 1
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "orchestrator: the orchestrator does not answer at %s (start it with make run): %v\n", base, err)
		return 1
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		ID    string `json:"id"`
		Email string `json:"email"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode != http.StatusCreated {
		msg := out.Error.Message
		if msg == "" {
			msg = strings.TrimSpace(string(raw))
		}
		fmt.Fprintf(stderr, "orchestrator: the account was not created (%d): %s\n", resp.StatusCode, msg)
		return 1
	}
	role := "operator account"
	if *admin {
		role = "instance admin"
	}
	fmt.Fprintf(stdout, "created %s %s (%s); sign in at %s/\n", role, out.Email, out.ID, base)
	return 0
}

// bootstrapToken is GUILDS_ADMIN_TOKEN, else the token make run keeps in the data folder.
func bootstrapToken(cfg config.Config) (string, error) {
	if cfg.AdminToken != "" {
		return cfg.AdminToken, nil
	}
	file := filepath.Join(cfg.DataDir, "admin-token")
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no bootstrap token: set GUILDS_ADMIN_TOKEN (or run make run once, which keeps one in %s)", file)
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readPassword asks for the password without echo on a terminal, else reads one line.
func readPassword(stdin io.Reader, prompt io.Writer, line bool) (string, error) {
	if f, ok := stdin.(*os.File); ok && !line && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "password (12 characters or more): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		return string(b), err
	}
	s, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	s = strings.TrimRight(s, "\r\n")
	if s == "" {
		return "", errors.New("standard input held no password")
	}
	return s, nil
}
