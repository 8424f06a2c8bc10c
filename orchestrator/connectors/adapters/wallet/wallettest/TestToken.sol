// SPDX-License-Identifier: MIT
// A minimal ERC-20 for the Wallet adapter's tests: 6 decimals, the whole supply minted to the
// deployer, a transfer beyond the balance reverting with a reason, and guarded() reverting
// unless called with exactly 1 wei; and TestSwap, a pool that swaps one token for twice as much
// of another, or 1e-12 of the wei sent in a token of 6 decimals, what the swap APIs' fakes route
// through. Compiled by compile.js (npm solc) into TestToken.json.
pragma solidity ^0.8.28;

contract TestToken {
    string public constant name = "Test Dollar";
    string public constant symbol = "TUSD";
    uint8 public constant decimals = 6;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public pokes;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

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

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        require(allowance[from][msg.sender] >= value, "TestToken: insufficient allowance");
        require(balanceOf[from] >= value, "TestToken: transfer amount exceeds balance");
        allowance[from][msg.sender] -= value;
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
        return true;
    }

    function guarded() external payable {
        require(msg.value == 1, "TestToken: send exactly 1 wei");
        pokes += 1;
    }
}

contract TestSwap {
    function swapTokens(address tokenIn, uint256 amountIn, address tokenOut, uint256 minOut) external {
        require(TestToken(tokenIn).transferFrom(msg.sender, address(this), amountIn), "TestSwap: pull failed");
        uint256 out = amountIn * 2;
        require(out >= minOut, "TestSwap: slippage");
        require(TestToken(tokenOut).transfer(msg.sender, out), "TestSwap: pay failed");
    }

    function swapNative(address tokenOut, uint256 minOut) external payable {
        uint256 out = msg.value / 1e12;
        require(out >= minOut, "TestSwap: slippage");
        require(TestToken(tokenOut).transfer(msg.sender, out), "TestSwap: pay failed");
    }
}
