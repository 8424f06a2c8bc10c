// Compiles TestToken.sol and TestSeaport.sol with npm solc (tools/chain) into TestToken.json and TestSeaport.json.
// Run from this folder: node compile.js
const fs = require("fs");
const path = require("path");
const solc = require(path.join(__dirname, "../../../../../tools/chain/node_modules/solc"));
const input = {
  language: "Solidity",
  sources: {
    "TestToken.sol": { content: fs.readFileSync(path.join(__dirname, "TestToken.sol"), "utf8") },
    "TestSeaport.sol": { content: fs.readFileSync(path.join(__dirname, "TestSeaport.sol"), "utf8") },
  },
  settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: "paris", outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of out.errors || []) {
  if (e.severity === "error") { console.error(e.formattedMessage); process.exit(1); }
}
const c = out.contracts["TestToken.sol"].TestToken;
const sw = out.contracts["TestToken.sol"].TestSwap;
fs.writeFileSync(path.join(__dirname, "TestToken.json"),
  JSON.stringify({ compiler: "solc " + solc.version(), abi: c.abi, bytecode: "0x" + c.evm.bytecode.object,
    swap_abi: sw.abi, swap_bytecode: "0x" + sw.evm.bytecode.object }, null, 1) + "\n");
const nft = out.contracts["TestSeaport.sol"].TestNFT;
const sea = out.contracts["TestSeaport.sol"].TestSeaport;
fs.writeFileSync(path.join(__dirname, "TestSeaport.json"),
  JSON.stringify({ compiler: "solc " + solc.version(), nft_bytecode: "0x" + nft.evm.bytecode.object,
    seaport_abi: sea.abi, seaport_bytecode: "0x" + sea.evm.bytecode.object,
    conduit_bytecode: "0x" + out.contracts["TestSeaport.sol"].TestConduit.evm.bytecode.object }, null, 1) + "\n");
