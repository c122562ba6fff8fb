// Cards as the service sends them: two characters, rank `23456789TJQKA` then suit `cdhs`,
// or a joker, `X1` or `X2` (docs/jokers.md; ids 52, 53, after the 52 cards).
// On screen a card shows its rank and suit symbol, coloured by suit (four colours: the suit
// symbol carries the meaning, the colour only helps), and reads as "king of hearts"; a joker
// shows a star and "JKR" and reads as "joker".

export const RANKS = "23456789TJQKA";
export const SUITS = "cdhs";

const RANK_NAMES: Record<string, string> = {
  "2": "two", "3": "three", "4": "four", "5": "five", "6": "six", "7": "seven", "8": "eight",
  "9": "nine", T: "ten", J: "jack", Q: "queen", K: "king", A: "ace",
};
const SUIT_NAMES: Record<string, string> = { c: "clubs", d: "diamonds", h: "hearts", s: "spades" };
const SUIT_SYMBOLS: Record<string, string> = { c: "♣", d: "♦", h: "♥", s: "♠" };

export const JOKERS: readonly string[] = ["X1", "X2"];
const NATURAL_CARDS = 52;

/** True for a joker, `X1` or `X2`. */
export function isJoker(code: string): boolean {
  return JOKERS.includes(code);
}

/** True for a canonical card code such as `As`, `Td`, `2c`, or a joker `X1`, `X2`. */
export function isCard(code: string): boolean {
  return isJoker(code) || (code.length === 2 && RANKS.includes(code[0]!) && SUITS.includes(code[1]!));
}

/** The canonical id: 4 × rank index + suit index (`2c` = 0 … `As` = 51), then `X1` = 52, `X2` = 53. */
export function cardId(code: string): number {
  if (!isCard(code)) throw new Error(`not a card: ${JSON.stringify(code)}`);
  if (isJoker(code)) return NATURAL_CARDS + JOKERS.indexOf(code);
  return 4 * RANKS.indexOf(code[0]!) + SUITS.indexOf(code[1]!);
}

/** The card of an id (0..53). */
export function cardOf(id: number): string {
  if (id >= NATURAL_CARDS) return JOKERS[id - NATURAL_CARDS]!;
  return RANKS[Math.floor(id / 4)]! + SUITS[id % 4]!;
}

/** "K" and "♥" for `Kh` ("10" for tens, as printed on cards); "JKR" and "★" for a joker. */
export function face(code: string): { rank: string; suit: string } {
  if (isJoker(code)) return { rank: "JKR", suit: "★" };
  const rank = code[0] === "T" ? "10" : code[0]!;
  return { rank, suit: SUIT_SYMBOLS[code[1]!] ?? "?" };
}

/** "king of hearts"; "joker" for either joker (the two play alike). */
export function cardName(code: string): string {
  if (isJoker(code)) return "joker";
  return `${RANK_NAMES[code[0]!] ?? "?"} of ${SUIT_NAMES[code[1]!] ?? "?"}`;
}

/** The CSS class of a suit: `suit-c`, `suit-d`, `suit-h`, `suit-s`; `joker` for a joker. */
export function suitClass(code: string): string {
  return isJoker(code) ? "joker" : `suit-${code[1]}`;
}

/** Highest first: by rank, then s > h > d > c (the solver's order). */
export function byStrength(a: string, b: string): number {
  return cardId(b) - cardId(a);
}
