// Package wallettest starts what the Wallet tests sign against: a real anvil node on loopback
// behind a proxy that checks the Alchemy key in the path, and the ERC-20 fixture compiled by npm
// solc (TestToken.sol → TestToken.json, rebuilt with node compile.js).
package wallettest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// The anvil dev account the wallet signs with, and a second one that is funded too.
const (
	DevKey   = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	DevAddr  = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	Dev2Addr = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
)

//go:embed TestToken.json
var tokenJSON []byte

//go:embed TestSeaport.json
var seaportJSON []byte

// anvilPath finds the anvil binary: GUILDS_ANVIL, else tools/chain's npm package in the repository.
func anvilPath() (string, error) {
	if p := os.Getenv("GUILDS_ANVIL"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "tools", "chain", "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no anvil under tools/chain/node_modules: make setup installs it (or set GUILDS_ANVIL)")
		}
		dir = parent
	}
}

// Node is one anvil on loopback and the proxy in front of it.
type Node struct {
	RPC      string // anvil's own URL (no key)
	Proxy    string // the proxy's base: <Proxy>/<any name>/<key> reaches anvil
	Key      string // the key the proxy wants as the path's last segment
	Requests atomic.Int64
	cmd      *exec.Cmd
}

// Anvil starts anvil with a chain id behind a key-checking proxy; a machine without it skips the
// test, except under CI.
func Anvil(t testing.TB, chainID uint64, key string) *Node {
	t.Helper()
	bin, err := anvilPath()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--chain-id", strconv.FormatUint(chainID, 10), "--silent")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start anvil: %v", err)
	}
	n := &Node{RPC: fmt.Sprintf("http://127.0.0.1:%d", port), Key: key, cmd: cmd}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := n.Call("eth_chainId"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("anvil did not answer within 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	target := n.RPC
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Requests.Add(1)
		if key != "" && !strings.HasSuffix(r.URL.Path, "/"+key) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Must be authenticated!"}}`))
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, target, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	n.Proxy = proxy.URL
	return n
}

// Call sends one JSON-RPC request straight to anvil and returns its raw result.
func (n *Node) Call(method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	resp, err := http.Post(n.RPC, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if out.Error != nil {
		return nil, fmt.Errorf("%s: %s", method, out.Error.Message)
	}
	return out.Result, nil
}

// Must is Call that fails the test on an error.
func (n *Node) Must(t testing.TB, method string, params ...any) json.RawMessage {
	t.Helper()
	r, err := n.Call(method, params...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Balance is an address's native balance in wei.
func (n *Node) Balance(t testing.TB, addr string) *big.Int {
	return hexBig(t, n.Must(t, "eth_getBalance", addr, "latest"))
}

// Nonce is an address's mined transaction count.
func (n *Node) Nonce(t testing.TB, addr string) uint64 {
	return hexBig(t, n.Must(t, "eth_getTransactionCount", addr, "latest")).Uint64()
}

// TokenBalance is balanceOf(owner) on a token.
func (n *Node) TokenBalance(t testing.TB, token, owner string) *big.Int {
	data := "0x70a08231" + strings.Repeat("0", 24) + strings.ToLower(strings.TrimPrefix(owner, "0x"))
	return hexBig(t, n.Must(t, "eth_call", map[string]any{"to": token, "data": data}, "latest"))
}

// DeployToken deploys the ERC-20 fixture from the dev account with a supply in base units
// (6 decimals) and returns its address.
func (n *Node) DeployToken(t testing.TB, supply *big.Int) string {
	t.Helper()
	return n.deploy(t, fixture(t).Bytecode+fmt.Sprintf("%064x", supply))
}

// DeploySwap deploys the TestSwap pool from the dev account and returns its address.
func (n *Node) DeploySwap(t testing.TB) string {
	t.Helper()
	return n.deploy(t, fixture(t).SwapBytecode)
}

// DeployNFT deploys the ERC-721 fixture and returns its address.
func (n *Node) DeployNFT(t testing.TB) string {
	t.Helper()
	return n.deploy(t, seaFixture(t).NFT)
}

// DeploySeaport deploys TestSeaport (Seaport 1.6's basic order and cancel) and returns its address.
func (n *Node) DeploySeaport(t testing.TB) string {
	t.Helper()
	return n.deploy(t, seaFixture(t).Seaport)
}

// PlaceSeaport deploys TestSeaport and copies its code to addr (Seaport's own address), so the
// wallet's orders name the address they would on a real chain.
func (n *Node) PlaceSeaport(t testing.TB, addr string) {
	t.Helper()
	at := n.DeploySeaport(t)
	var code string
	if err := json.Unmarshal(n.Must(t, "eth_getCode", at, "latest"), &code); err != nil {
		t.Fatal(err)
	}
	n.Must(t, "anvil_setCode", addr, code)
}

// PlaceToken copies the ERC-20 fixture's code to addr (a well-known token's address, WETH say)
// and gives holder a balance there (the fixture's balanceOf is storage slot 1).
func (n *Node) PlaceToken(t testing.TB, addr, holder string, balance *big.Int) {
	t.Helper()
	at := n.DeployToken(t, big.NewInt(0))
	var code string
	if err := json.Unmarshal(n.Must(t, "eth_getCode", at, "latest"), &code); err != nil {
		t.Fatal(err)
	}
	n.Must(t, "anvil_setCode", addr, code)
	key := make([]byte, 64)
	h, _ := new(big.Int).SetString(strings.TrimPrefix(strings.ToLower(holder), "0x"), 16)
	h.FillBytes(key[12:32])
	key[63] = 1
	slot := crypto.Keccak256(key)
	n.Must(t, "anvil_setStorageAt", addr, fmt.Sprintf("0x%x", slot), fmt.Sprintf("0x%064x", balance))
}

// PlaceConduit puts TestConduit's code at addr (OpenSea's conduit address).
func (n *Node) PlaceConduit(t testing.TB, addr string) {
	t.Helper()
	var fx struct {
		Conduit string `json:"conduit_bytecode"`
	}
	if err := json.Unmarshal(seaportJSON, &fx); err != nil {
		t.Fatal(err)
	}
	at := n.deploy(t, fx.Conduit)
	var code string
	if err := json.Unmarshal(n.Must(t, "eth_getCode", at, "latest"), &code); err != nil {
		t.Fatal(err)
	}
	n.Must(t, "anvil_setCode", addr, code)
}

// SeaportABI is TestSeaport's ABI (Seaport's functions and signerOf).
func SeaportABI(t testing.TB) string {
	var fx struct {
		ABI json.RawMessage `json:"seaport_abi"`
	}
	if err := json.Unmarshal(seaportJSON, &fx); err != nil {
		t.Fatal(err)
	}
	return string(fx.ABI)
}

func seaFixture(t testing.TB) struct{ NFT, Seaport string } {
	var fx struct {
		NFT     string `json:"nft_bytecode"`
		Seaport string `json:"seaport_bytecode"`
	}
	if err := json.Unmarshal(seaportJSON, &fx); err != nil {
		t.Fatal(err)
	}
	return struct{ NFT, Seaport string }{fx.NFT, fx.Seaport}
}

// Transact sends a transaction from an unlocked dev account and waits for its success.
func (n *Node) Transact(t testing.TB, from, to, data string, value *big.Int) {
	t.Helper()
	tx := map[string]any{"from": from, "to": to, "data": data}
	if value != nil {
		tx["value"] = fmt.Sprintf("0x%x", value)
	}
	n.wait(t, n.send(t, tx))
}

// TransferToken moves a token amount from an unlocked dev account.
func (n *Node) TransferToken(t testing.TB, token, from, to string, amount *big.Int) {
	t.Helper()
	n.Transact(t, from, token, "0xa9059cbb"+strings.Repeat("0", 24)+strings.ToLower(strings.TrimPrefix(to, "0x"))+fmt.Sprintf("%064x", amount), nil)
}

type fixtureJSON struct {
	Bytecode     string `json:"bytecode"`
	SwapBytecode string `json:"swap_bytecode"`
}

func fixture(t testing.TB) fixtureJSON {
	var fx fixtureJSON
	if err := json.Unmarshal(tokenJSON, &fx); err != nil {
		t.Fatal(err)
	}
	return fx
}

func (n *Node) deploy(t testing.TB, code string) string {
	t.Helper()
	return n.wait(t, n.send(t, map[string]any{"from": DevAddr, "data": code}))
}

func (n *Node) send(t testing.TB, tx map[string]any) string {
	t.Helper()
	var hash string
	if err := json.Unmarshal(n.Must(t, "eth_sendTransaction", tx), &hash); err != nil {
		t.Fatal(err)
	}
	return hash
}

// wait polls for a receipt, fails unless it succeeded, and returns the created contract (if any).
func (n *Node) wait(t testing.TB, hash string) string {
	t.Helper()
	var rc struct {
		Contract string `json:"contractAddress"`
		Status   string `json:"status"`
	}
	for i := 0; ; i++ {
		raw := n.Must(t, "eth_getTransactionReceipt", hash)
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, &rc); err != nil || rc.Status != "0x1" {
				t.Fatalf("transaction %s: %s %v", hash, raw, err)
			}
			return rc.Contract
		}
		if i == 200 {
			t.Fatalf("transaction %s: no receipt within 10 s", hash)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hexBig(t testing.TB, raw json.RawMessage) *big.Int {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	n, ok := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	if !ok {
		t.Fatalf("not a hex quantity: %s", s)
	}
	return n
}
