// Package shared is the contract between the orchestrator and the sandbox helpers (PROTOCOL.md).
package shared
