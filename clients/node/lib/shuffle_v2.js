// ofc-shuffle-v2 (docs/shuffle-v2.md): ofc-shuffle-v1's word stream and unbiased choice on a
// deck of N = 52, 53 or 54 cards, the 52 in id order (id = 4 * rank_index + suit_index) and
// then the jokers X1 (id 52) and X2 (id 53). N = 52 gives exactly the v1 deck. Built on
// lib/shuffle.js (v1) and lib/cards.js alone, with node:crypto beneath them.
'use strict';

const v1 = require('./shuffle');
const { cardCode } = require('./cards');

const ALGORITHM = 'ofc-shuffle-v2';
const DECK_SIZES = [52, 53, 54];

/** The deck's card ids, position 0 (dealt first) first: v1's Fisher-Yates on N cards. */
function shuffleDeckV2(serverSeed, clientSeed, nonce, deckSize) {
  if (!DECK_SIZES.includes(deckSize)) {
    throw new RangeError(`${ALGORITHM} shuffles 52..54 cards, not ${deckSize}`);
  }
  if (!Buffer.isBuffer(clientSeed)) throw new TypeError('client seed must be a Buffer');
  return v1.shuffleDeck(serverSeed, clientSeed, nonce, deckSize);
}

/** The deal algorithm of a deck with `jokers` jokers: v1 for the 52 cards alone, else v2. */
const algorithmFor = (jokers) => (jokers ? ALGORITHM : v1.ALGORITHM);

/** The deck of a hand: ofc-shuffle-v1 for 52 cards, ofc-shuffle-v2 with 1 or 2 jokers. */
function dealDeck(serverSeed, clientSeed, nonce, jokers) {
  return jokers ? shuffleDeckV2(serverSeed, clientSeed, nonce, 52 + jokers) : v1.shuffleDeck(serverSeed, clientSeed, nonce);
}

module.exports = {
  ALGORITHM,
  DECK_SIZES,
  algorithmFor,
  blockMessage: v1.blockMessage,
  cardCode,
  choice: v1.choice,
  commitment: v1.commitment,
  dealDeck,
  shuffleDeckV2,
  wordStream: v1.wordStream,
};
