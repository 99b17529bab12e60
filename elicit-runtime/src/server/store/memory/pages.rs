//! [`Pages`]: the in-process store's long-lived texts, packed into pages.
//!
//! A finished flow's record lives for minutes while everything a request allocates lives for
//! microseconds. Held one allocation each, the records' texts end up scattered among the request
//! path's short-lived blocks, the system allocator's free lists fragment around them, and every
//! allocation of every request slows down as the store grows (measured with glibc's allocator:
//! a two-round flow cost 8 µs with 10,000 records in the store and 12 µs with 600,000). Packed
//! into pages of [`PAGE`] bytes, written in the order the records are made, they take a few large
//! blocks instead, and a page is freed whole when the last text in it goes.
//!
//! Records made at about the same time expire at about the same time, so pages empty in about
//! the order they were filled. A record that lives longer keeps its page: what pages hold is
//! bounded by what was written during the longest life a record can have, not by how many
//! records live.

use std::collections::VecDeque;

/// The size of a page, in bytes.
pub(super) const PAGE: usize = 16 * 1024;

/// A text longer than this takes its own allocation rather than a quarter of a page or more.
const LARGE: usize = PAGE / 4;

/// Where a text is kept.
pub(super) enum Text {
    /// In page number `page`, `len` bytes from `start`.
    Paged { page: u64, start: u32, len: u32 },
    /// A large text, on its own.
    Own(Box<str>),
}

struct Page {
    text: String,
    /// How many texts in this page are still kept.
    live: u32,
}

/// Texts packed into pages; the newest page takes the next text.
#[derive(Default)]
pub(super) struct Pages {
    pages: VecDeque<Page>,
    /// The number of `pages[0]`.
    first: u64,
}

impl Pages {
    /// Keeps `text` until [`Pages::free`] is called with what this returns.
    pub(super) fn keep(&mut self, text: &str) -> Text {
        if text.len() > LARGE {
            return Text::Own(Box::from(text));
        }
        let room = self.pages.back().is_some_and(|page| page.text.capacity() - page.text.len() >= text.len());
        if !room {
            self.pages.push_back(Page { text: String::with_capacity(PAGE), live: 0 });
        }
        let number = self.first + self.pages.len() as u64 - 1;
        let Some(page) = self.pages.back_mut() else { return Text::Own(Box::from(text)) };
        // Both fit in u32: a page is `PAGE` bytes.
        let start = page.text.len() as u32;
        page.text.push_str(text);
        page.live += 1;
        Text::Paged { page: number, start, len: text.len() as u32 }
    }

    /// The text kept at `at`.
    pub(super) fn get<'a>(&'a self, at: &'a Text) -> &'a str {
        match at {
            Text::Own(text) => text,
            Text::Paged { page, start, len } => {
                let page = self.page(*page).map_or("", |page| page.text.as_str());
                let (start, len) = (*start as usize, *len as usize);
                page.get(start..start + len).unwrap_or("")
            }
        }
    }

    /// Lets the text at `at` go; its page goes with its last text.
    pub(super) fn free(&mut self, at: Text) {
        let Text::Paged { page, .. } = at else { return };
        let Some(index) = page.checked_sub(self.first).and_then(|i| usize::try_from(i).ok()) else { return };
        let newest = index + 1 == self.pages.len();
        let Some(page) = self.pages.get_mut(index) else { return };
        page.live = page.live.saturating_sub(1);
        if page.live == 0 {
            if newest {
                // The page taking new texts: emptied, it starts over.
                page.text.clear();
            } else {
                page.text = String::new();
            }
        }
        while self.pages.len() > 1 && self.pages.front().is_some_and(|page| page.live == 0) {
            self.pages.pop_front();
            self.first += 1;
        }
    }

    /// The bytes the pages hold.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.pages.iter().map(|page| page.text.capacity()).sum()
    }

    fn page(&self, number: u64) -> Option<&Page> {
        let index = usize::try_from(number.checked_sub(self.first)?).ok()?;
        self.pages.get(index)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn texts_read_back_until_freed_and_empty_pages_go() {
        let mut pages = Pages::default();
        let texts: Vec<String> =
            (0..2_000).map(|i| format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 40))).collect();
        let mut kept: Vec<Option<Text>> = texts.iter().map(|t| Some(pages.keep(t))).collect();
        for (text, at) in texts.iter().zip(&kept) {
            assert_eq!(pages.get(at.as_ref().unwrap()), text);
        }
        let full = pages.held();
        assert!(full >= PAGE * 2, "2,000 texts fill several pages");
        // Free every text but the last hundred: all pages but the last one or two go.
        for at in kept.iter_mut().take(1_900) {
            pages.free(at.take().unwrap());
        }
        assert!(pages.held() <= PAGE * 2, "emptied pages are freed: {} bytes held", pages.held());
        for (text, at) in texts.iter().zip(&kept).skip(1_900) {
            assert_eq!(pages.get(at.as_ref().unwrap()), text, "the texts still kept read back");
        }
    }

    #[test]
    fn a_page_in_the_middle_is_freed_when_emptied() {
        let mut pages = Pages::default();
        let text = "y".repeat(LARGE);
        let first: Vec<Text> = (0..4).map(|_| pages.keep(&text)).collect();
        let middle: Vec<Text> = (0..4).map(|_| pages.keep(&text)).collect();
        let last = pages.keep(&text);
        assert_eq!(pages.pages.len(), 3);
        for at in middle {
            pages.free(at);
        }
        assert_eq!(pages.held(), PAGE * 2, "the emptied middle page holds nothing");
        assert_eq!(pages.get(&first[0]), text);
        assert_eq!(pages.get(&last), text);
        for at in first {
            pages.free(at);
        }
        assert_eq!(pages.pages.len(), 1, "empty pages at the front are dropped");
        assert_eq!(pages.get(&last), text);
    }

    #[test]
    fn a_large_text_is_kept_on_its_own() {
        let mut pages = Pages::default();
        let large = "z".repeat(LARGE + 1);
        let at = pages.keep(&large);
        assert!(matches!(at, Text::Own(_)));
        assert_eq!(pages.get(&at), large);
        assert_eq!(pages.held(), 0);
        pages.free(at);
    }
}
