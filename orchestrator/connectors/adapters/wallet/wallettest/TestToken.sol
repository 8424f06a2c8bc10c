// SPDX-License-Identifier: MIT
// A minimal ERC-20 for the Wallet adapter's tests: 6 decimals, the whole supply minted to the
// deployer, a transfer beyond the balance reverting with a reason, and guarded() reverting
// unless called with exactly 1 wei. Compiled by compile.js (npm solc) into TestToken.json.
pragma solidity ^0.8.28;

contract TestToken {
    string public constant name = "Test Dollar";
    string public constant symbol = "TUSD";
    uint8 public constant decimals = 6;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    uint256 public pokes;

    event Transfer(address indexed from, address indexed to, uint256 value);

    constructor(uint256 supply) {
        totalSupply = supply;
        balanceOf[msg.sender] = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        require(balanceOf[msg.sender] >= value, "TestToken: transfer amount exceeds balance");
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }

    function guarded() external payable {
        require(msg.value == 1, "TestToken: send exactly 1 wei");
        pokes += 1;
    }
}
