//! Check-digit algorithms used by the card and ID-number validators.
//!
//! Every function takes ASCII digit values (`0..=9`, not `b'0'..=b'9'`) so callers convert once
//! and the algorithms stay free of parsing concerns. None of them can panic: lengths are checked
//! by the callers' format rules, and an unexpected length simply fails the check.

/// Luhn (ISO/IEC 7812-1): bank cards, Canadian SINs, Swedish personnummer.
pub(crate) fn luhn(digits: &[u8]) -> bool {
    if digits.is_empty() {
        return false;
    }
    let mut sum = 0u32;
    for (index, &digit) in digits.iter().rev().enumerate() {
        let mut value = u32::from(digit);
        if index % 2 == 1 {
            value *= 2;
            if value > 9 {
                value -= 9;
            }
        }
        sum += value;
    }
    sum.is_multiple_of(10)
}

/// Verhoeff's dihedral-group check (Indian Aadhaar numbers).
pub(crate) fn verhoeff(digits: &[u8]) -> bool {
    const D: [[u8; 10]; 10] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
        [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
        [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
        [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
        [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
        [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
        [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
        [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    ];
    const P: [[u8; 10]; 8] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
        [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
        [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
        [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
        [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
        [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
        [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
    ];
    if digits.is_empty() || digits.iter().any(|&d| d > 9) {
        return false;
    }
    let mut check = 0u8;
    for (index, &digit) in digits.iter().rev().enumerate() {
        let permuted = P[index % 8][usize::from(digit)];
        check = D[usize::from(check)][usize::from(permuted)];
    }
    check == 0
}

/// ISO 7064 MOD 11-2 check character of the first 17 digits of a Chinese resident ID:
/// returns the expected character, `b'0'..=b'9'` or `b'X'`.
pub(crate) fn iso7064_mod11_2(digits: &[u8]) -> u8 {
    let mut sum = 0u32;
    for &digit in digits {
        sum = (sum + u32::from(digit)) * 2 % 11;
    }
    let check = (12 - sum % 11) % 11;
    match check {
        10 => b'X',
        // `check` is below 10 here, so the cast cannot truncate.
        value => b'0' + value as u8,
    }
}

/// ISO 7064 MOD 11,10 (the German Steuer-ID): the expected final digit for the leading digits.
pub(crate) fn iso7064_mod11_10(digits: &[u8]) -> u8 {
    let mut product = 10u32;
    for &digit in digits {
        let mut sum = (u32::from(digit) + product) % 10;
        if sum == 0 {
            sum = 10;
        }
        product = sum * 2 % 11;
    }
    let check = (11 - product) % 10;
    // `check` is below 10, so the cast cannot truncate.
    check as u8
}

/// A weighted digit sum, the building block of most national check digits.
pub(crate) fn weighted_sum(digits: &[u8], weights: &[u32]) -> u32 {
    digits
        .iter()
        .zip(weights)
        .map(|(&d, &w)| u32::from(d) * w)
        .sum()
}

/// `digits` read as a decimal number, if it fits in `u64`.
pub(crate) fn decimal_value(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// True when every digit is the same (`000000000`, `1111…`): such values pass several
/// checksums by construction and are never real identifiers.
pub(crate) fn all_same(digits: &[u8]) -> bool {
    digits.windows(2).all(|pair| pair[0] == pair[1])
}

/// Whether `year-month-day` is a real calendar date.
pub(crate) fn valid_date(year: u32, month: u32, day: u32) -> bool {
    if !(1..=12).contains(&month) || day == 0 {
        return false;
    }
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    day <= days
}

/// Two decimal digits as a number.
pub(crate) fn two(digits: &[u8], at: usize) -> u32 {
    match (digits.get(at), digits.get(at + 1)) {
        (Some(&a), Some(&b)) => u32::from(a) * 10 + u32::from(b),
        _ => u32::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Vec<u8> {
        s.bytes().map(|b| b - b'0').collect()
    }

    #[test]
    fn luhn_known_values() {
        assert!(luhn(&d("4111111111111111")));
        assert!(luhn(&d("046454286")));
        assert!(!luhn(&d("4111111111111112")));
        assert!(!luhn(&[]));
    }

    #[test]
    fn verhoeff_known_values() {
        assert!(verhoeff(&d("2363")));
        assert!(verhoeff(&d("234123412346")));
        assert!(!verhoeff(&d("234123412347")));
    }

    #[test]
    fn china_check_character() {
        assert_eq!(iso7064_mod11_2(&d("11010519491231002")), b'X');
        assert_eq!(iso7064_mod11_2(&d("44052418800101001")), b'4');
    }

    #[test]
    fn steuer_id_check_digit() {
        // Published sample Steuer-ID 86095742719.
        assert_eq!(iso7064_mod11_10(&d("8609574271")), 9);
    }

    #[test]
    fn dates() {
        assert!(valid_date(2000, 2, 29));
        assert!(!valid_date(1900, 2, 29));
        assert!(!valid_date(2023, 13, 1));
        assert!(!valid_date(2023, 4, 31));
    }
}
