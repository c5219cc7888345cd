//! Passwords in prose after an explicit label: "my password is …", "pw: …", "Passwort: …",
//! "mot de passe : …", "пароль: …", "パスワードは…", "密码：…", "비밀번호는 …".
//!
//! A label is found by the keys filter's trigger automaton; what follows it is parsed directly
//! (no expression, no window), with a bounded look-ahead, so each label costs O(1). The
//! password is the next whitespace-delimited token (or the quoted text) after a separator —
//! `:`, `=`, a dash, or the language's "is" — without sentence punctuation around it. The label
//! stays; only the value is reported.
//!
//! Prose also says "the password is incorrect" and "Password: must be 8 characters": a value
//! that is a placeholder, a mask or a word of [`STOP_WORDS`] is not a password.

use std::ops::Range;

use super::values::{placeholder, type_name};

/// English password labels, in lower case.
const ENGLISH_LABELS: &[&str] = &["password", "passwd", "passphrase", "passcode", "pw", "pwd"];

/// Password labels of other languages, in lower case. Labels in scripts with case are also
/// matched Capitalised and in UPPER CASE (see [`label_triggers`]), English ones too.
const LABELS: &[&str] = &[
    // German
    "passwort",
    "kennwort",
    // French
    "mot de passe",
    // Spanish
    "contraseña",
    "contrasena",
    // Portuguese
    "senha",
    "palavra-passe",
    // Dutch
    "wachtwoord",
    // Polish, Czech and Slovak
    "hasło",
    "haslo",
    "heslo",
    // Scandinavian and Finnish
    "lösenord",
    "passord",
    "adgangskode",
    "salasana",
    // Turkish, Romanian, Hungarian
    "şifre",
    "parola",
    "parolă",
    "jelszó",
    // Indonesian, Vietnamese
    "kata sandi",
    "mật khẩu",
    // Russian, Ukrainian
    "пароль",
    // Japanese, Chinese, Korean
    "パスワード",
    "密码",
    "密碼",
    "口令",
    "비밀번호",
    "암호",
];

/// Every spelling of every label the trigger automaton looks for.
pub(super) fn label_triggers() -> Vec<String> {
    let mut out = Vec::new();
    for label in ENGLISH_LABELS.iter().chain(LABELS) {
        out.push((*label).to_owned());
        let upper = label.to_uppercase();
        if upper != *label {
            let mut chars = label.chars();
            let capitalised: String = chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
            out.push(capitalised);
            out.push(upper);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Words that say "is" between a label and its value ("password is", "Passwort ist",
/// "mot de passe est", "contraseña es", "senha é", "la password è", "lösenord är",
/// "wachtwoord is", "hasło to", "heslo je").
const VERBS: &[&str] = &[
    "is", "was", "ist", "war", "lautet", "est", "était", "es", "era", "é", "è", "är", "er", "to",
    "je", "jest", "adalah", "là",
];

/// Whether `label` is one of the English labels.
fn is_english(label: &str) -> bool {
    let lower = label.to_lowercase();
    ENGLISH_LABELS.contains(&lower.as_str())
}

/// Whether `verb` says "is" after `label`: "to" does only in Polish ("hasło to …"); in English
/// "the password to alice" it does not.
fn verb_joins(label: &str, verb: &str) -> bool {
    verb != "to" || label.to_lowercase().starts_with("has")
}

/// Particles that join a CJK label to its value ("パスワードは", "密码是", "비밀번호는").
const PARTICLES: &[char] = &['は', 'が', '是', '为', '為', '는', '은', '이', '가'];

/// Adverbs that may stand between "is" and the value ("my password is now hunter2").
const FILLERS: &[&str] = &[
    "now",
    "still",
    "just",
    "simply",
    "jetzt",
    "nun",
    "maintenant",
    "ahora",
    "agora",
    "ora",
    "nu",
    "теперь",
];

/// Words that follow a password label in prose without being a password: verbs and adjectives
/// that describe one ("the password is incorrect", "Password: must be 8 characters"), function
/// words, and the same in the other languages of [`LABELS`]. Plausible weak passwords (`admin`,
/// `welcome`, `letmein`) are deliberately absent: those are redacted.
const STOP_WORDS: &[&[&str]] = &[
    ENGLISH_FUNCTION_WORDS,
    ENGLISH_DESCRIPTIONS,
    GERMAN,
    FRENCH,
    SPANISH,
    PORTUGUESE,
    DUTCH_SCANDINAVIAN_ITALIAN,
    OTHER_LATIN,
    RUSSIAN,
];

/// Stop words: English function words.
#[rustfmt::skip]
const ENGLISH_FUNCTION_WORDS: &[&str] = &[
    "the", "a", "an", "is", "was", "are", "be", "been", "being", "your", "my", "our", "their",
    "his", "her", "its", "this", "that", "these", "those", "there", "here", "same", "one", "you",
    "not", "no", "yes", "must", "should", "will", "would", "can", "could", "may", "might", "shall",
    "and", "or", "but", "nor", "so", "for", "from", "to", "of", "in", "on", "at", "by", "with",
    "without", "as", "it", "we", "they", "he", "she", "if", "when", "then", "than", "also", "only",
    "just", "very", "too", "still", "now", "always", "never", "usually", "often", "probably",
    "likely", "actually", "currently", "already", "again", "what", "which", "who", "how", "why",
    "where", "like", "about", "after", "before", "into", "over", "under", "every", "each", "any",
    "all", "some", "none", "something", "anything", "nothing", "everything", "either", "neither",
    "both", "other", "another", "such", "more", "less", "most", "least", "please", "here's",
    "below", "above", "following", "attached", "enclosed", "later", "soon", "it's", "that's",
    "there's", "don't", "isn't", "can't", "won't", "doesn't", "you'll",
];

/// Stop words: what English prose says about a password.
#[rustfmt::skip]
const ENGLISH_DESCRIPTIONS: &[&str] = &[
    "incorrect", "correct", "wrong", "right", "invalid", "valid", "required", "mandatory",
    "optional", "needed", "necessary", "expired", "expiring", "expires", "empty", "blank",
    "missing", "unset", "set", "reset", "changed", "change", "updated", "update", "saved", "stored",
    "encrypted", "hashed", "salted", "protected", "secure", "insecure", "safe", "unsafe", "weak",
    "strong", "long", "short", "simple", "complex", "easy", "hard", "random", "unique", "different",
    "similar", "known", "unknown", "used", "reused", "shared", "private", "compromised", "leaked",
    "stolen", "forgotten", "forgot", "lost", "locked", "unlocked", "disabled", "enabled",
    "accepted", "rejected", "ignored", "cached", "printed", "logged", "written", "typed", "entered",
    "masked", "hidden", "shown", "visible", "displayed", "sent", "generated", "provided", "given",
    "configured", "defined", "specified", "available", "unavailable", "case-sensitive", "sensitive",
    "good", "bad", "fine", "great", "ok", "okay", "enter", "type", "choose", "pick", "create",
    "use", "using", "see", "check", "ask", "contact", "click", "follow", "call", "send", "keep",
    "make", "write", "remember", "characters", "character", "chars", "letters", "digits", "numbers",
    "symbols", "length", "minimum", "maximum", "field", "prompt", "input", "value", "manager",
    "policy", "rules", "requirements", "hint", "reminder", "recovery", "protection", "strength",
    "expiry", "expiration", "login", "authentication", "access", "account", "user", "username",
    "email", "mail", "n/a", "tbd", "todo", "unchanged", "pending", "automatically", "manually",
    "securely", "temporary", "permanent", "default", "case", "insensitive", "case-insensitive",
];

/// Stop words in German.
#[rustfmt::skip]
const GERMAN: &[&str] = &[
    "der", "die", "das", "ein", "eine", "ist", "sind", "war", "nicht", "kein", "keine", "ihr",
    "ihre", "dein", "deine", "mein", "meine", "unser", "und", "oder", "für", "mit", "ohne",
    "falsch", "richtig", "korrekt", "ungültig", "gültig", "erforderlich", "notwendig", "abgelaufen",
    "leer", "geändert", "vergessen", "gesperrt", "zu", "sehr", "noch", "schon", "bitte", "eingeben",
    "siehe", "unten", "oben", "sicher", "unsicher", "lang", "kurz", "mindestens", "zeichen",
    "gespeichert", "verschlüsselt", "jetzt", "neu", "neues", "alt", "altes",
];

/// Stop words in French.
#[rustfmt::skip]
const FRENCH: &[&str] = &[
    "le", "la", "les", "un", "une", "des", "est", "sont", "était", "pas", "ne", "votre", "vos",
    "ton", "ta", "mon", "ma", "notre", "et", "ou", "pour", "avec", "sans", "incorrecte", "invalide",
    "valide", "requis", "obligatoire", "expiré", "vide", "oublié", "changé", "modifié", "trop",
    "très", "encore", "déjà", "voir", "ci-dessous", "sécurisé", "caractères", "au", "aux", "du",
    "de", "nouveau", "ancien", "maintenant",
];

/// Stop words in Spanish.
#[rustfmt::skip]
const SPANISH: &[&str] = &[
    "el", "los", "las", "unos", "es", "son", "era", "tu", "su", "sus", "mi", "mis", "nuestra", "y",
    "o", "para", "con", "sin", "incorrecta", "inválida", "invalida", "válida", "requerida",
    "obligatoria", "expirada", "caducada", "vacía", "vacia", "olvidada", "correcta", "cambiada",
    "demasiado", "muy", "todavía", "ya", "ver", "abajo", "segura", "caracteres", "nueva", "antigua",
    "ahora",
];

/// Stop words in Portuguese.
#[rustfmt::skip]
const PORTUGUESE: &[&str] = &[
    "os", "uma", "é", "são", "não", "nao", "sua", "seu", "minha", "meu", "nossa", "e", "com", "sem",
    "incorreta", "obrigatória", "vazia", "errada", "correta", "alterada", "esquecida", "muito",
    "ainda", "já", "abaixo", "nova", "antiga", "agora",
];

/// Stop words in Dutch, the Scandinavian languages and Italian.
#[rustfmt::skip]
const DUTCH_SCANDINAVIAN_ITALIAN: &[&str] = &[
    "het", "een", "niet", "onjuist", "ongeldig", "verplicht", "verlopen", "leeg", "juist", "är",
    "inte", "fel", "ogiltigt", "krävs", "er", "ikke", "feil", "forkert", "ugyldig", "è", "il", "lo",
    "gli", "non", "errata", "sbagliata", "obbligatoria", "scaduta", "vuota", "nuova",
];

/// Stop words in Polish, Czech, Turkish, Hungarian, Indonesian and Vietnamese.
#[rustfmt::skip]
const OTHER_LATIN: &[&str] = &[
    "jest", "nie", "nieprawidłowe", "wymagane", "je", "není", "nesprávné", "povinné", "yanlış",
    "gerekli", "hatalı", "geçersiz", "nem", "helytelen", "kötelező", "salah", "wajib", "adalah",
    "sai", "không",
];

/// Stop words in Russian.
#[rustfmt::skip]
const RUSSIAN: &[&str] = &[
    "не", "ваш", "ваша", "мой", "моя", "наш", "и", "или", "для", "неверный", "неправильный",
    "обязателен", "обязательно", "истёк", "истек", "пустой", "изменён", "изменен", "верный",
    "слишком", "должен", "забыт", "забыл", "новый", "старый", "ниже", "теперь", "уже", "это",
];

/// Whether `value` is a word prose uses around a password rather than a password: one of
/// [`STOP_WORDS`], or a lower-case participle or adverb ("is loaded", "pwd: expected bytes",
/// "is usually"), which passwords rarely are.
pub(super) fn is_stop_word(value: &str) -> bool {
    let lower = value.to_lowercase();
    // A compound counts by its last part: "bcrypt-hashed", "auto-generated".
    let last = value.rsplit('-').next().unwrap_or(value);
    let describes = !last.is_empty()
        && value.chars().all(|c| c.is_lowercase() || c == '-')
        && ["ed", "ing", "able", "ible", "ly"]
            .iter()
            .any(|suffix| last.ends_with(suffix));
    describes
        || STOP_WORDS
            .iter()
            .any(|words| words.contains(&lower.as_str()))
}

/// Characters that end a password token: whitespace, and the CJK scripts and punctuation that
/// follow a password without a space ("パスワードはabc123です", "密码是abc123。").
fn ends_token(c: char) -> bool {
    c.is_whitespace()
        || matches!(c as u32,
            0x1100..=0x11FF | 0x2E80..=0x303F | 0x3040..=0x30FF | 0x3130..=0x318F
            | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F | 0xFF00..=0xFFEF)
}

/// Whether `c` is written inside words, so a label glued to it is part of a longer word.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether a label starts with a CJK character: such labels are glued to the words around them.
fn is_cjk_label(label: &str) -> bool {
    label.chars().next().is_some_and(ends_token)
}

/// Opening and closing quotes a password may stand between.
const QUOTES: &[(char, char)] = &[
    ('"', '"'),
    ('\'', '\''),
    ('`', '`'),
    ('“', '”'),
    ('„', '“'),
    ('‘', '’'),
    ('«', '»'),
    ('「', '」'),
    ('『', '』'),
];

/// Sentence punctuation stripped from the end of a password token.
const TRAILING: &[char] = &[
    '.', ',', ';', ':', ')', ']', '}', '"', '\'', '`', '”', '’', '»', '」', '』', '。', '，', '、',
];

/// The longest password considered, in bytes; a longer token is not prose.
const MAX_VALUE: usize = 128;

/// The password after a label found at `label` (a byte range of `text`), if one follows.
pub(super) fn value_after(text: &str, label: Range<usize>) -> Option<Range<usize>> {
    let label_text = text.get(label.clone())?;
    let cjk = is_cjk_label(label_text);
    if !cjk {
        let before = text.get(..label.start)?.chars().next_back();
        if before.is_some_and(|c| is_word_char(c) || c == '-') {
            return None;
        }
    }
    if super::documents_field(text.get(..label.start)?) {
        return None;
    }
    let rest = text.get(label.end..)?;
    let after_separator = separator(rest, label_text, cjk)?;
    let start = label.end + after_separator;
    let value = value_at(text.get(start..)?)?;
    let range = start + value.start..start + value.end;
    // `password: TextField,` is a field's type; `password is FojomYutu` a password.
    let colon = rest.get(..after_separator)?.contains([':', '：']);
    let next = text
        .get(range.end..)?
        .trim_start_matches([' ', '\t'])
        .chars()
        .next();
    let code = colon && matches!(next, Some(',' | ';' | ')' | '{' | '=' | '|'));
    acceptable(text.get(range.clone())?, code).then_some(range)
}

/// Horizontal space: spaces, tabs, no-break and ideographic spaces, never a line break.
fn skip_spaces(text: &str, from: usize) -> usize {
    let tail = text.get(from..).unwrap_or_default();
    from + tail
        .char_indices()
        .find(|(_, c)| !matches!(c, ' ' | '\t' | '\u{a0}' | '\u{3000}'))
        .map_or(tail.len(), |(i, _)| i)
}

/// The offset in `rest` (the text right after a label) where the value starts, if a separator
/// follows the label: `:`/`：`, a spaced dash, a CJK particle, or "is" in one of
/// [`VERBS`] (then maybe a `:` and one of [`FILLERS`]).
fn separator(rest: &str, label: &str, cjk: bool) -> Option<usize> {
    let first = rest.chars().next()?;
    if !cjk && is_word_char(first) {
        // `passwords`, `Passwortes`: the label is part of a longer word.
        return None;
    }
    // Markdown emphasis may close around the label: `**Password**: …`.
    let at = skip_spaces(rest, skip_emphasis(rest, 0));
    let next = rest.get(at..)?.chars().next()?;
    match next {
        // `=` is left to the assignment expression, which knows where connection-string
        // values end (`Password=…;Encrypt=true`).
        ':' | '：' => {
            let after = at + next.len_utf8();
            if rest.get(after..)?.starts_with(['=', ':']) {
                return None;
            }
            Some(skip_spaces(rest, skip_emphasis(rest, after)))
        }
        // "Пароль — …"; in English a dash goes on with the sentence ("your password — never
        // share it"), so English labels do not take one.
        '-' | '–' | '—' if !is_english(label) => {
            let after = at + next.len_utf8();
            rest.get(after..)?
                .starts_with([' ', '\t'])
                .then(|| skip_spaces(rest, after))
        }
        c if cjk && at == 0 && PARTICLES.contains(&c) => {
            let after = skip_spaces(rest, c.len_utf8());
            Some(colon_then_spaces(rest, after))
        }
        _ if at > 0 => {
            let word_len = word_len(rest.get(at..)?);
            let word = rest.get(at..at + word_len)?;
            let verb = word.to_lowercase();
            if !VERBS.contains(&verb.as_str()) || !verb_joins(label, &verb) {
                return None;
            }
            let after = at + word_len;
            let next = rest.get(after..)?.chars().next()?;
            if !matches!(next, ' ' | '\t' | ':' | '：') {
                return None;
            }
            let after = colon_then_spaces(rest, skip_spaces(rest, after));
            Some(skip_filler(rest, after))
        }
        _ => None,
    }
}

/// The length of the word `tail` starts with, or of a prefix of it a little over 16 bytes if the
/// word is longer (the verbs and fillers looked for are short); always a char boundary.
fn word_len(tail: &str) -> usize {
    for (i, c) in tail.char_indices() {
        if i > 16 || !is_word_char(c) {
            return i;
        }
    }
    tail.len()
}

/// Past up to three Markdown emphasis characters (`**`, `__`) at `at`.
fn skip_emphasis(rest: &str, at: usize) -> usize {
    let tail = rest.get(at..).unwrap_or_default();
    at + tail
        .bytes()
        .take(3)
        .take_while(|b| matches!(b, b'*' | b'_'))
        .count()
}

/// Past an optional `:` and the spaces after it.
fn colon_then_spaces(rest: &str, at: usize) -> usize {
    match rest.get(at..).and_then(|tail| tail.chars().next()) {
        Some(c @ (':' | '：')) => skip_spaces(rest, at + c.len_utf8()),
        _ => at,
    }
}

/// Past one adverb of [`FILLERS`] and the spaces after it, if `at` starts with one.
fn skip_filler(rest: &str, at: usize) -> usize {
    let tail = rest.get(at..).unwrap_or_default();
    let word_len = word_len(tail);
    let word = &tail[..word_len];
    let spaced = tail[word_len..].starts_with([' ', '\t']);
    if spaced && FILLERS.contains(&word.to_lowercase().as_str()) {
        skip_spaces(rest, at + word_len)
    } else {
        at
    }
}

/// The value at the start of `tail`: the text between quotes, or the token up to whitespace or
/// CJK text without sentence punctuation around it. A relative range of `tail`.
fn value_at(tail: &str) -> Option<Range<usize>> {
    let first = tail.chars().next()?;
    if let Some(&(_, close)) = QUOTES.iter().find(|(open, _)| *open == first) {
        let inner = first.len_utf8();
        let line = tail
            .get(inner..)?
            .char_indices()
            .take_while(|(i, c)| *c != '\n' && *i <= MAX_VALUE)
            .find(|(_, c)| *c == close);
        if let Some((end, _)) = line {
            let value = tail.get(inner..inner + end)?;
            // A quoted phrase with spaces is prose ("password is "whatever you like"").
            if !value.is_empty() && !value.contains(char::is_whitespace) {
                return Some(inner..inner + end);
            }
            return None;
        }
    }
    let end = token_end(tail)?;
    let token = tail.get(..end)?;
    // `[REDACTED]`, `<password>`, `{{ .Values.password }}`: a marker or a template.
    if token.starts_with(['[', '<', '{']) {
        return None;
    }
    let opening: &[char] = &['(', '"', '\'', '`', '“', '‘', '«', '„'];
    let trimmed_start = token.trim_start_matches(opening);
    let start = token.len() - trimmed_start.len();
    let trimmed = trimmed_start.trim_end_matches(TRAILING);
    Some(start..start + trimmed.len())
}

/// Where the token at the start of `tail` ends, if within [`MAX_VALUE`] bytes. Bounded, so
/// text without spaces after many labels (`pw:pw:pw:…`) is read at most this far per label;
/// ASCII is judged byte by byte, other characters decoded.
fn token_end(tail: &str) -> Option<usize> {
    let bytes = tail.as_bytes();
    let mut i = 0;
    while i < bytes.len() && i <= MAX_VALUE {
        let b = bytes[i];
        if b.is_ascii() {
            if b.is_ascii_whitespace() {
                return Some(i);
            }
            i += 1;
            continue;
        }
        let c = tail.get(i..)?.chars().next()?;
        if ends_token(c) {
            return Some(i);
        }
        i += c.len_utf8();
    }
    (i <= MAX_VALUE).then_some(bytes.len())
}

/// Whether a value after a label looks like a password rather than prose about one, or code
/// (`password = self.password`, `pw = getpass()`, `password: &str`, `pwd: /home/me`, and when
/// `code` says code punctuation follows, `password: TextField,`).
fn acceptable(value: &str, code: bool) -> bool {
    let core = value
        .trim_start_matches(['&', '*', '?'])
        .trim_end_matches(['?', '!']);
    // `self.password`, `os.environ`; `Falcon.luna42` has digits, as passwords do and
    // attribute paths rarely do.
    let dotted_path = value.contains('.')
        && value.split('.').all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphabetic() || c == '_')
        });
    let names_a_password = value.chars().all(|c| c.is_alphabetic() || c == '_')
        && value.to_lowercase().contains("pass");
    value.chars().count() >= 4
        && !placeholder(value)
        && !placeholder(core)
        && (!code || !type_name(value))
        && !is_stop_word(value)
        && !dotted_path
        && !names_a_password
        && !value.contains("://")
        && !value.contains(['(', '<', '['])
        && !value.starts_with(['[', '{', '/', '~', '\\'])
        && !value.starts_with("%(")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The password after the first label in `text`, found the way the trigger pass finds it.
    fn after(text: &str) -> Option<&str> {
        let labels = label_triggers();
        let (start, label) = labels
            .iter()
            .filter_map(|label| text.find(label.as_str()).map(|at| (at, label)))
            .min_by_key(|(at, label)| (*at, std::cmp::Reverse(label.len())))?;
        value_after(text, start..start + label.len()).map(|range| &text[range])
    }

    #[test]
    fn labels_in_each_language() {
        let cases = [
            ("my password is hunter2.", "hunter2"),
            ("The password is: Tr0ub4dor&3, ok?", "Tr0ub4dor&3"),
            ("my password is now banana42", "banana42"),
            ("pw: s3cr3t!", "s3cr3t!"),
            ("PWD: Zx9#plm", "Zx9#plm"),
            ("passcode: 482913", "482913"),
            ("Passwort: Sommer2024!", "Sommer2024!"),
            ("Mein Passwort ist Kuchen99.", "Kuchen99"),
            ("Kennwort: geheim123", "geheim123"),
            ("mot de passe : Soleil#42", "Soleil#42"),
            ("Mon mot de passe est chaton2023", "chaton2023"),
            ("contraseña: Perro_2024", "Perro_2024"),
            ("Mi contraseña es gato1234.", "gato1234"),
            ("senha: Praia@2023", "Praia@2023"),
            ("A minha senha é futebol10", "futebol10"),
            ("пароль: Медведь42", "Медведь42"),
            ("Мой пароль — qwerty123", "qwerty123"),
            ("パスワード:abc123XYZ", "abc123XYZ"),
            ("パスワードは「Sakura2024」です", "Sakura2024"),
            ("パスワードはhanami88です", "hanami88"),
            ("我的密码是abc12345。", "abc12345"),
            ("密码：Beijing2008", "Beijing2008"),
            ("비밀번호: Seoul1234", "Seoul1234"),
            ("비밀번호는 kimchi77입니다", "kimchi77"),
            ("wachtwoord: Fiets2024", "Fiets2024"),
            ("hasło to Kotek123", "Kotek123"),
            ("la password è Gatto2024", "Gatto2024"),
            ("password is \"Blue-Moon-7\"", "Blue-Moon-7"),
            ("(password: abc123)", "abc123"),
            ("**Password:** Winter2025", "Winter2025"),
            ("**Password**: Winter2025", "Winter2025"),
            ("password: password1", "password1"),
        ];
        for (text, expected) in cases {
            assert_eq!(after(text), Some(expected), "{text}");
        }
    }

    #[test]
    fn prose_about_passwords_is_not_a_password() {
        let cases = [
            "the password is incorrect",
            "Password is required.",
            "password: ******",
            "password: <redacted>",
            "Password: must be 8 characters",
            "The password is case-sensitive.",
            "the password is case sensitive",
            "The password is bcrypt-hashed",
            "the password is auto-generated at signup",
            "your password is at least 12 characters",
            "Passwort: falsch",
            "le mot de passe est incorrect",
            "la contraseña es incorrecta",
            "a senha é obrigatória",
            "пароль неверный",
            "пароль: неверный",
            "the password was reset yesterday",
            "passwords are hashed",
            "passwordless login",
            "Password: [PASSWORD]",
            "password: ${DB_PASSWORD}",
            "password is \"whatever you like\"",
            "password: https://reset.example.com",
            "DB_PASSWORD",
            "password reset link",
            "the pw: no",
            "send the password to alice",
            "password = self.password",
            "pw = getpass()",
            "password: &str",
            "password: Option<String>",
            "password: PasswordHash",
            "pwd: /home/me",
            "Password: the one you chose",
            "password: Optional[str] = None",
            "password: !vault |",
            "your password — it's easy",
            "Failed password for invalid user admin from 10.0.0.1",
            "<label>Password:</label><input type=\"password\">",
            "read -s -p \"Password: \" PASS; echo \"done\"",
            "https://example.com/password/reset",
            ":param password: Unicode password.",
            "when a private key with a passphrase is loaded.",
            "raise TypeError(\"pwd: expected bytes\")",
            "the passphrase is limited to 1024 bytes",
            "pub(crate) password: TextField,",
        ];
        for text in cases {
            assert_eq!(after(text), None, "{text}");
        }
    }

    #[test]
    fn triggers_cover_case_variants() {
        let labels = label_triggers();
        for spelling in [
            "Password",
            "PASSWORD",
            "Passwort",
            "Mot de passe",
            "Пароль",
            "密码",
        ] {
            assert!(labels.iter().any(|l| l == spelling), "{spelling}");
        }
    }
}
