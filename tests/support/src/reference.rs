//! The showcase's booking references in result texts: `book_trip` mints a random one per booking
//! (`Booked! Reference BK-…: …`), so tests find it, or mask it to compare whole texts.

/// The reference in a `Booked! Reference <ref>: …` text.
pub fn booking_reference(text: &str) -> Option<&str> {
    text.strip_prefix("Booked! Reference ")?.split_once(':').map(|(reference, _)| reference)
}

/// `text` with its booking reference replaced by `<ref>`, for comparing texts of bookings whose
/// references are random.
pub fn mask_reference(text: &str) -> String {
    match booking_reference(text) {
        Some(reference) => text.replacen(reference, "<ref>", 1),
        None => text.to_owned(),
    }
}
