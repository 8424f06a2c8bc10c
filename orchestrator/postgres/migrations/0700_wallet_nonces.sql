-- The Wallet's nonces: one row per (chain id, address) whose row lock every replica takes while
-- it signs and broadcasts, so concurrent sends never reuse or skip a nonce. next_nonce is the
-- nonce after the last broadcast and last_hash that transaction (a node that does not know it
-- dropped it, and its nonce is free again). Nothing here is a key.

CREATE TABLE wallet_nonces (
    chain_id   bigint NOT NULL CHECK (chain_id > 0),
    address    text NOT NULL CHECK (address ~ '^0x[0-9a-f]{40}$'),
    next_nonce bigint CHECK (next_nonce >= 0),
    last_hash  text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chain_id, address)
);
