//! A small random source for the unit tests that compare two implementations on random inputs.

/// xorshift64: a fixed sequence per seed, so a failure replays.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next number below `n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    /// The next index into something `len` long.
    pub(crate) fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// Up to `max` pieces drawn from `pieces`, joined.
    pub(crate) fn text(&mut self, pieces: &[&str], max: usize) -> String {
        let len = self.index(max + 1);
        (0..len).map(|_| pieces[self.index(pieces.len())]).collect()
    }
}
