// SPDX-License-Identifier: MIT
// Test stand-ins for the OpenSea tools: a minimal ERC-721, and TestSeaport exposing Seaport 1.6's
// fulfillBasicOrder_efficient_6GL6yc (ETH for an ERC-721, paying the offerer and the additional
// recipients, the NFT moved from the offerer; or an ERC-721 for an ERC-20 offer, the NFT moved
// from the fulfiller through TestConduit when a fulfiller conduit key is given, the additional
// recipients paid out of the offer by the offerer, as Seaport does), cancel (only the offerer, per order), getCounter,
// and signerOf, which recovers an order's signer from Seaport's EIP-712 digest computed here in
// Solidity (an implementation independent of the wallet's). Same selectors and layouts as
// Seaport. Compiled by compile.js (npm solc) into TestSeaport.json.
pragma solidity ^0.8.28;

import "TestToken.sol";

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

// TestConduit stands at OpenSea's conduit address: it moves an NFT it was approved for.
contract TestConduit {
    function move(address token, address from, address to, uint256 id) external {
        TestNFT(token).transferFrom(from, to, id);
    }
}

contract TestSeaport {
    address constant CONDUIT = 0x1E0049783F008A0085193E00003D00cd54003c71;

    mapping(bytes32 => bool) public cancelled;

    bytes32 constant OFFER_TYPEHASH = keccak256("OfferItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount)");
    bytes32 constant CONSIDERATION_TYPEHASH = keccak256("ConsiderationItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount,address recipient)");
    bytes32 constant ORDER_TYPEHASH = keccak256(
        abi.encodePacked(
            "OrderComponents(address offerer,address zone,OfferItem[] offer,ConsiderationItem[] consideration,uint8 orderType,uint256 startTime,uint256 endTime,bytes32 zoneHash,uint256 salt,bytes32 conduitKey,uint256 counter)",
            "ConsiderationItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount,address recipient)",
            "OfferItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount)"
        )
    );

    function getCounter(address) external pure returns (uint256) {
        return 0;
    }

    function orderDigest(OrderComponents calldata o) public view returns (bytes32) {
        bytes32[] memory offers = new bytes32[](o.offer.length);
        for (uint256 i = 0; i < o.offer.length; i++) {
            OfferItem calldata it = o.offer[i];
            offers[i] = keccak256(abi.encode(OFFER_TYPEHASH, it.itemType, it.token, it.identifierOrCriteria, it.startAmount, it.endAmount));
        }
        bytes32[] memory cons = new bytes32[](o.consideration.length);
        for (uint256 i = 0; i < o.consideration.length; i++) {
            ConsiderationItem calldata it = o.consideration[i];
            cons[i] = keccak256(abi.encode(CONSIDERATION_TYPEHASH, it.itemType, it.token, it.identifierOrCriteria, it.startAmount, it.endAmount, it.recipient));
        }
        bytes memory head = abi.encode(ORDER_TYPEHASH, o.offerer, o.zone, keccak256(abi.encodePacked(offers)), keccak256(abi.encodePacked(cons)), o.orderType);
        bytes32 structHash = keccak256(abi.encodePacked(head, abi.encode(o.startTime, o.endTime, o.zoneHash, o.salt, o.conduitKey, o.counter)));
        bytes32 domain = keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("Seaport"),
                keccak256("1.6"),
                block.chainid,
                address(this)
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domain, structHash));
    }

    function signerOf(OrderComponents calldata o, bytes calldata sig) external view returns (address) {
        require(sig.length == 65, "TestSeaport: signature length");
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        return ecrecover(orderDigest(o), v, r, s);
    }

    function fulfillBasicOrder_efficient_6GL6yc(BasicOrderParameters calldata p) external payable returns (bool) {
        if (p.basicOrderType >= 16 && p.basicOrderType <= 19) {
            return acceptOffer(p);
        }
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

    function acceptOffer(BasicOrderParameters calldata p) internal returns (bool) {
        require(msg.value == 0, "TestSeaport: an offer takes no value");
        require(block.timestamp >= p.startTime && block.timestamp < p.endTime, "TestSeaport: order not active");
        if (p.fulfillerConduitKey != bytes32(0)) {
            TestConduit(CONDUIT).move(p.considerationToken, msg.sender, p.offerer, p.considerationIdentifier);
        } else {
            TestNFT(p.considerationToken).transferFrom(msg.sender, p.offerer, p.considerationIdentifier);
        }
        uint256 amount = p.offerAmount;
        for (uint256 i = 0; i < p.additionalRecipients.length; i++) {
            amount -= p.additionalRecipients[i].amount;
            require(TestToken(p.offerToken).transferFrom(p.offerer, p.additionalRecipients[i].recipient, p.additionalRecipients[i].amount), "TestSeaport: fee");
        }
        require(TestToken(p.offerToken).transferFrom(p.offerer, msg.sender, amount), "TestSeaport: pay");
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
