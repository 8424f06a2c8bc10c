// SPDX-License-Identifier: MIT
// Test stand-ins for the OpenSea tools: a minimal ERC-721, and TestSeaport exposing Seaport 1.6's
// fulfillBasicOrder_efficient_6GL6yc (ETH for an ERC-721, paying the offerer and the additional
// recipients, the NFT moved from the offerer) and cancel (only the offerer, per order), with the
// same selectors and argument layouts. Compiled by compile.js (npm solc) into TestSeaport.json.
pragma solidity ^0.8.28;

contract TestNFT {
    mapping(uint256 => address) public ownerOf;
    mapping(address => mapping(address => bool)) public isApprovedForAll;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    function mint(address to, uint256 id) external {
        require(ownerOf[id] == address(0), "TestNFT: minted");
        ownerOf[id] = to;
        emit Transfer(address(0), to, id);
    }

    function setApprovalForAll(address operator, bool approved) external {
        isApprovedForAll[msg.sender][operator] = approved;
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from, "TestNFT: not the owner");
        require(msg.sender == from || isApprovedForAll[from][msg.sender], "TestNFT: not approved");
        ownerOf[id] = to;
        emit Transfer(from, to, id);
    }
}

struct AdditionalRecipient {
    uint256 amount;
    address payable recipient;
}

struct BasicOrderParameters {
    address considerationToken;
    uint256 considerationIdentifier;
    uint256 considerationAmount;
    address payable offerer;
    address zone;
    address offerToken;
    uint256 offerIdentifier;
    uint256 offerAmount;
    uint8 basicOrderType;
    uint256 startTime;
    uint256 endTime;
    bytes32 zoneHash;
    uint256 salt;
    bytes32 offererConduitKey;
    bytes32 fulfillerConduitKey;
    uint256 totalOriginalAdditionalRecipients;
    AdditionalRecipient[] additionalRecipients;
    bytes signature;
}

struct OfferItem {
    uint8 itemType;
    address token;
    uint256 identifierOrCriteria;
    uint256 startAmount;
    uint256 endAmount;
}

struct ConsiderationItem {
    uint8 itemType;
    address token;
    uint256 identifierOrCriteria;
    uint256 startAmount;
    uint256 endAmount;
    address payable recipient;
}

struct OrderComponents {
    address offerer;
    address zone;
    OfferItem[] offer;
    ConsiderationItem[] consideration;
    uint8 orderType;
    uint256 startTime;
    uint256 endTime;
    bytes32 zoneHash;
    uint256 salt;
    bytes32 conduitKey;
    uint256 counter;
}

contract TestSeaport {
    mapping(bytes32 => bool) public cancelled;

    function fulfillBasicOrder_efficient_6GL6yc(BasicOrderParameters calldata p) external payable returns (bool) {
        require(p.considerationToken == address(0) && p.basicOrderType == 0, "TestSeaport: only ETH for an ERC-721");
        require(block.timestamp >= p.startTime && block.timestamp < p.endTime, "TestSeaport: order not active");
        uint256 total = p.considerationAmount;
        for (uint256 i = 0; i < p.additionalRecipients.length; i++) {
            total += p.additionalRecipients[i].amount;
        }
        require(msg.value == total, "TestSeaport: wrong value");
        TestNFT(p.offerToken).transferFrom(p.offerer, msg.sender, p.offerIdentifier);
        p.offerer.transfer(p.considerationAmount);
        for (uint256 i = 0; i < p.additionalRecipients.length; i++) {
            p.additionalRecipients[i].recipient.transfer(p.additionalRecipients[i].amount);
        }
        return true;
    }

    function cancel(OrderComponents[] calldata orders) external returns (bool) {
        for (uint256 i = 0; i < orders.length; i++) {
            require(orders[i].offerer == msg.sender, "TestSeaport: not the offerer");
            cancelled[keccak256(abi.encode(orders[i]))] = true;
        }
        return true;
    }
}
