//! Structure-aware generation: answers that get past the first checks often enough to reach the
//! deep ones. Raw bytes rarely spell a valid e-mail, date-time or in-range `u128` next to twenty
//! other valid fields; these generators pick each field's value near the interesting edges of its
//! schema, sometimes valid, sometimes just wrong, sometimes any JSON at all.

use arbitrary::{Result, Unstructured};
use elicit_runtime::schema::{NumberSchema, PrimitiveSchema, RequestedSchema, StringFormat};
use elicit_test_support::formats::VALID_EMAILS;
use serde_json::{Map, Number, Value};

/// `content` for `schema`. Half the time every property gets a value meant to be valid, but for
/// at most one (so whole answers parse and the checks behind a successful parse run); otherwise
/// each property is absent, plausible or anything. Plus the odd unknown key.
pub fn content(u: &mut Unstructured<'_>, schema: &RequestedSchema) -> Result<Map<String, Value>> {
    let mut content = Map::new();
    let count = schema.properties.len();
    // `count` and beyond: no property is off.
    let off = if u.arbitrary()? { Some(u.int_in_range(0..=count)?) } else { None };
    for (i, property) in schema.properties.iter().enumerate() {
        let value = match off {
            Some(off) if off != i => Some(valid(u, &property.schema)?),
            _ => match u.int_in_range(0u8..=9)? {
                0 => None,
                1 => Some(any_json(u, 2)?),
                _ => Some(plausible(u, &property.schema)?),
            },
        };
        if let Some(value) = value {
            content.insert(property.name.to_string(), value);
        }
    }
    if u.ratio(1u8, 8)? {
        content.insert(text(u)?, any_json(u, 1)?);
    }
    Ok(content)
}

/// An elicitation answer: mostly well-formed, with content for `schema` when there is one.
pub fn elicit_answer(u: &mut Unstructured<'_>, schema: Option<&RequestedSchema>) -> Result<Value> {
    let mut answer = Map::new();
    let action = match u.int_in_range(0u8..=9)? {
        0..=5 => Value::from("accept"),
        6 => Value::from("decline"),
        7 => Value::from("cancel"),
        8 => Value::from(text(u)?),
        _ => any_json(u, 1)?,
    };
    if !u.ratio(1u8, 16)? {
        answer.insert("action".into(), action);
    }
    match (schema, u.int_in_range(0u8..=7)?) {
        (_, 0) => {}
        (_, 1) => {
            answer.insert("content".into(), any_json(u, 2)?);
        }
        (Some(schema), _) => {
            answer.insert("content".into(), Value::Object(content(u, schema)?));
        }
        (None, _) => {}
    }
    if u.ratio(1u8, 8)? {
        answer.insert(pick(u, &["resultType", "_meta", "completion", "elicitationId"])?.into(), any_json(u, 1)?);
    }
    Ok(Value::Object(answer))
}

/// A value this property accepts, chosen within its constraints.
pub fn valid(u: &mut Unstructured<'_>, schema: &PrimitiveSchema) -> Result<Value> {
    Ok(match schema {
        PrimitiveSchema::String(s) => Value::String(match s.format {
            None => {
                let min = usize::try_from(s.min_length.unwrap_or(0)).unwrap_or(0).min(64);
                let max = usize::try_from(s.max_length.unwrap_or(16)).unwrap_or(16).clamp(min, min + 16);
                let len = u.int_in_range(min..=max)?;
                (0..len).map(|_| u.arbitrary::<char>()).collect::<Result<String>>()?
            }
            Some(StringFormat::Email) => pick(u, VALID_EMAILS)?.to_owned(),
            Some(StringFormat::Uri) => pick(u, VALID_URIS)?.to_owned(),
            Some(StringFormat::Date) => valid_date(u)?,
            Some(StringFormat::DateTime) => valid_date_time(u)?,
        }),
        PrimitiveSchema::Number(s) => valid_number(u, s)?,
        PrimitiveSchema::Boolean(_) => Value::Bool(u.arbitrary()?),
        PrimitiveSchema::SingleSelect(s) => Value::String(u.choose(&s.options)?.value.to_string()),
        PrimitiveSchema::MultiSelect(s) => {
            let min = usize::try_from(s.min_items.unwrap_or(0)).unwrap_or(0).min(8);
            let max = usize::try_from(s.max_items.unwrap_or(5)).unwrap_or(5).clamp(min, min + 5);
            let count = u.int_in_range(min..=max)?;
            // Choices may repeat: an answer is an array, not a set.
            let items = (0..count).map(|_| Ok(Value::String(u.choose(&s.options)?.value.to_string())));
            Value::Array(items.collect::<Result<_>>()?)
        }
    })
}

const VALID_URIS: &[&str] = &[
    "https://example.com/a?b=c#d",
    "urn:isbn:0451450523",
    "http://[::1]:8080/x",
    "mailto:ada@example.com",
    "https://xn--pple-43d.com/",
    "ftp://user@host/file.txt",
    "http://127.0.0.1",
    "https://example.com/%C3%A9",
    "web+demo:/.//not-a-host/",
    "tag:example.com,2026:x",
];

fn valid_date(u: &mut Unstructured<'_>) -> Result<String> {
    let year = u.int_in_range(0u32..=9999)?;
    let month = u.int_in_range(1u32..=12)?;
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let day = u.int_in_range(1u32..=days)?;
    Ok(format!("{year:04}-{month:02}-{day:02}"))
}

fn valid_date_time(u: &mut Unstructured<'_>) -> Result<String> {
    let date = valid_date(u)?;
    if u.ratio(1u8, 16)? {
        return Ok(format!("{date}T23:59:60Z"));
    }
    let (hour, minute, second) = (u.int_in_range(0u32..=23)?, u.int_in_range(0u32..=59)?, u.int_in_range(0u32..=59)?);
    let fraction = match u.int_in_range(0u8..=3)? {
        0 => format!(".{}", u.int_in_range(0u32..=999_999_999)?),
        _ => String::new(),
    };
    let offset = pick(u, &["Z", "z", "+00:00", "-08:00", "+05:30", "+23:59", "-23:59"])?;
    Ok(format!("{date}T{hour:02}:{minute:02}:{second:02}{fraction}{offset}"))
}

fn valid_number(u: &mut Unstructured<'_>, schema: &NumberSchema) -> Result<Value> {
    let as_i128 = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    if schema.integer {
        // Integer bounds beyond 64 bits arrive as floats; every one here is whole.
        let bound = |n: Option<&Number>, default: i128| {
            n.map_or(default, |n| as_i128(n).or_else(|| n.as_f64().map(|f| f as i128)).unwrap_or(default))
        };
        let min = bound(schema.minimum.as_ref(), -1_000_000);
        let max = bound(schema.maximum.as_ref(), 1_000_000).max(min);
        let i = match u.int_in_range(0u8..=3)? {
            0 => min,
            1 => max,
            _ => u.int_in_range(min..=max)?,
        };
        let number = match (i64::try_from(i), u64::try_from(i)) {
            (Ok(i), _) => Number::from(i),
            (_, Ok(x)) => Number::from(x),
            // Rounding is monotonic and the float bounds are exact, so this stays inside them.
            _ => float(i as f64),
        };
        return Ok(Value::Number(number));
    }
    let min = schema.minimum.as_ref().and_then(Number::as_f64).unwrap_or(-1e300);
    let max = schema.maximum.as_ref().and_then(Number::as_f64).unwrap_or(1e300).max(min);
    let t = f64::from(u.int_in_range(0u32..=1_000_000)?) / 1_000_000.0;
    let f = match u.int_in_range(0u8..=3)? {
        0 => min,
        1 => max,
        _ => (min * (1.0 - t) + max * t).clamp(min, max),
    };
    Ok(Value::Number(float(f)))
}

/// A value meant for a property of this kind, near its edges.
pub fn plausible(u: &mut Unstructured<'_>, schema: &PrimitiveSchema) -> Result<Value> {
    Ok(match schema {
        PrimitiveSchema::String(s) => {
            let text = match s.format {
                None => match u.int_in_range(0u8..=3)? {
                    0 => "x".repeat(usize::try_from(s.min_length.unwrap_or(1)).unwrap_or(1).min(64)),
                    1 => "é".repeat(
                        usize::try_from(s.max_length.unwrap_or(3)).unwrap_or(3).min(64)
                            + usize::from(u.arbitrary::<bool>()?),
                    ),
                    _ => text(u)?,
                },
                Some(StringFormat::Email) => email(u)?,
                Some(StringFormat::Uri) => uri(u)?,
                Some(StringFormat::Date) => date(u)?,
                Some(StringFormat::DateTime) => date_time(u)?,
            };
            Value::String(text)
        }
        PrimitiveSchema::Number(s) => number(u, s)?,
        PrimitiveSchema::Boolean(_) => Value::Bool(u.arbitrary()?),
        PrimitiveSchema::SingleSelect(s) => match u.choose(&s.options) {
            Ok(option) if !u.ratio(1u8, 8)? => Value::String(option.value.to_string()),
            _ => Value::String(text(u)?),
        },
        PrimitiveSchema::MultiSelect(s) => {
            let count = u.int_in_range(0usize..=5)?;
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                items.push(match u.int_in_range(0u8..=15)? {
                    0 => any_json(u, 0)?,
                    1 => Value::String(text(u)?),
                    _ => Value::String(u.choose(&s.options)?.value.to_string()),
                });
            }
            Value::Array(items)
        }
    })
}

fn pick<'a>(u: &mut Unstructured<'_>, choices: &[&'a str]) -> Result<&'a str> {
    u.choose(choices).copied()
}

/// A short arbitrary string, or now and then a long run of one character (long answers must fit
/// in the state carried to the next round).
pub fn text(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1u8, 32)? {
        return Ok(u.arbitrary::<char>()?.to_string().repeat(u.int_in_range(100usize..=1500)?));
    }
    let len = u.int_in_range(0usize..=12)?;
    (0..len).map(|_| u.arbitrary::<char>()).collect()
}

/// Any JSON value, nested at most `depth` deep.
pub fn any_json(u: &mut Unstructured<'_>, depth: u8) -> Result<Value> {
    let top = if depth == 0 { 4 } else { 6 };
    Ok(match u.int_in_range(0u8..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Number(any_number(u)?),
        3 | 4 => Value::String(text(u)?),
        5 => {
            let len = u.int_in_range(0usize..=3)?;
            Value::Array((0..len).map(|_| any_json(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let len = u.int_in_range(0usize..=3)?;
            let mut map = Map::new();
            for _ in 0..len {
                map.insert(text(u)?, any_json(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

fn float(f: f64) -> Number {
    Number::from_f64(f).unwrap_or_else(|| Number::from(0))
}

fn any_number(u: &mut Unstructured<'_>) -> Result<Number> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => Number::from(u.arbitrary::<i64>()?),
        1 => Number::from(u.arbitrary::<u64>()?),
        2 => float(u.arbitrary::<f64>()?),
        _ => Number::from(u.int_in_range(-3i64..=300)?),
    })
}

/// Edges every numeric field should be tried on.
const EDGES: &[f64] = &[
    0.0,
    -0.0,
    0.5,
    -1.0,
    3.0,
    1e308,
    -1e308,
    5e-324,
    9_007_199_254_740_992.0,
    9_007_199_254_740_994.0,
    3.402_823_466_385_288_6e38,
    3.402_823_466_385_289e38,
    -3.402_823_466_385_288_6e38,
    1.701_411_834_604_692_3e38,
    -1.701_411_834_604_692_3e38,
    1.701_411_834_604_692e38,
    3.402_823_669_209_385e38,
    1.844_674_407_370_955_2e19,
    -9.223_372_036_854_776e18,
];

fn number(u: &mut Unstructured<'_>, schema: &NumberSchema) -> Result<Value> {
    let bound = |n: Option<&Number>| n.cloned();
    Ok(Value::Number(match u.int_in_range(0u8..=9)? {
        0 => any_number(u)?,
        1 | 2 => match bound(if u.arbitrary()? { schema.minimum.as_ref() } else { schema.maximum.as_ref() }) {
            // The bound itself, or one step past it either way.
            Some(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => Number::from(i.saturating_add(u.int_in_range(-1i64..=1)?)),
                (_, Some(x), _) => Number::from(x.saturating_add(u.int_in_range(0u64..=1)?)),
                (_, _, Some(f)) => float(match u.int_in_range(0u8..=2)? {
                    0 => f.next_down(),
                    1 => f,
                    _ => f.next_up(),
                }),
                _ => n,
            },
            None => any_number(u)?,
        },
        3 => float(*u.choose(EDGES)?),
        4 => Number::from(*u.choose(&[i64::MIN, i64::MAX, -128, 127, 255, 256, -32768, 65535, 65536, -1, 0])?),
        5 => Number::from(*u.choose(&[u64::MAX, u64::MAX - 1, 9_007_199_254_740_993, 4_294_967_295, 4_294_967_296])?),
        6 => float(f64::from(u.int_in_range(-20i32..=120)?) / 4.0),
        _ => Number::from(u.int_in_range(-12i64..=300)?),
    }))
}

/// Something that may be an RFC 5321 mailbox.
pub fn email(u: &mut Unstructured<'_>) -> Result<String> {
    const LOCALS: &[&str] =
        &["ada", "a.b+c", "\"a b\"", "x_y", "", ".a", "a..b", "é", "o'brien", "user%tag", "Ada <ada"];
    const DOMAINS: &[&str] = &[
        "example.com",
        "[192.0.2.1]",
        "[IPv6:2001:db8::1]",
        "[ipv6:zz]",
        "[300.1.1.1]",
        "-x.com",
        "a-.com",
        "localhost",
        "123",
        "exa mple.com",
        "ex_ample.com",
        "example..com",
        "example.com.",
        "exämple.com",
        "example.com>",
    ];
    if u.ratio(1u8, 10)? {
        return text(u);
    }
    let mut local = pick(u, LOCALS)?.to_owned();
    if u.ratio(1u8, 12)? {
        local = "l".repeat(u.int_in_range(60usize..=70)?);
    }
    let mut domain = pick(u, DOMAINS)?.to_owned();
    if u.ratio(1u8, 12)? {
        domain = format!("{}.com", "a".repeat(u.int_in_range(60usize..=260)?));
    }
    let at = if u.ratio(1u8, 16)? { "@@" } else { "@" };
    Ok(format!("{local}{at}{domain}"))
}

/// Something that may be an absolute URI (and may or may not be a WHATWG URL).
pub fn uri(u: &mut Unstructured<'_>) -> Result<String> {
    const SCHEMES: &[&str] =
        &["https", "http", "urn", "mailto", "ftp", "web+demo", "", "1http", "HTTPS", "file", "javascript"];
    const SEPARATORS: &[&str] = &["://", ":", ":/", ":///", "//"];
    const AUTHORITIES: &[&str] = &[
        "example.com",
        "[::1]",
        "[v7.fuzz]",
        "h:99999",
        "h:8080",
        "user:pw@h",
        "xn--pple-43d.com",
        "exa mple.com",
        "",
        "%zz",
        "a.b.c.d.e",
        "127.0.0.1",
        "0x7f.1",
        "EXAMPLE.com.",
        "isbn:0451450523",
    ];
    const TAILS: &[&str] = &[
        "", "/", "/a|b", "/^x", "/[x]", "?q=1#f", "/a%20b", "/./../x", "//x", "/a b", "#", "?", "/\u{e9}", "\\x", "/%",
    ];
    if u.ratio(1u8, 10)? {
        return text(u);
    }
    Ok(format!("{}{}{}{}", pick(u, SCHEMES)?, pick(u, SEPARATORS)?, pick(u, AUTHORITIES)?, pick(u, TAILS)?))
}

/// Something that may be an RFC 3339 full-date.
pub fn date(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1u8, 12)? {
        return text(u);
    }
    let year = match u.int_in_range(0u8..=3)? {
        0 => *u.choose(&[0u32, 1, 1900, 2000, 2024, 2023, 9999])?,
        _ => u.int_in_range(0u32..=9999)?,
    };
    let month = u.int_in_range(0u32..=13)?;
    let day = u.int_in_range(0u32..=32)?;
    Ok(match u.int_in_range(0u8..=15)? {
        0 => format!("{year}-{month}-{day}"),
        1 => format!("{year:05}-{month:02}-{day:02}"),
        _ => format!("{year:04}-{month:02}-{day:02}"),
    })
}

/// Something that may be an RFC 3339 date-time.
pub fn date_time(u: &mut Unstructured<'_>) -> Result<String> {
    const OFFSETS: &[&str] =
        &["Z", "z", "+00:00", "-00:00", "-08:00", "+23:59", "+24:00", "+5:00", "", "+02:60", "-23:59"];
    if u.ratio(1u8, 12)? {
        return text(u);
    }
    let date = date(u)?;
    let separator = *u.choose(&['T', 't', 'T', 'T', ' '])?;
    let (hour, minute, second) = match u.int_in_range(0u8..=4)? {
        // The leap second, right or wrong for the offset.
        0 => (23, 59, 60),
        1 => (u.int_in_range(0u32..=24)?, 59, 60),
        _ => (u.int_in_range(0u32..=24)?, u.int_in_range(0u32..=60)?, u.int_in_range(0u32..=61)?),
    };
    let fraction = match u.int_in_range(0u8..=4)? {
        0 => ".".to_owned(),
        1 => format!(".{}", "1234567891234".get(..u.int_in_range(1usize..=13)?).unwrap_or("1")),
        _ => String::new(),
    };
    Ok(format!("{date}{separator}{hour:02}:{minute:02}:{second:02}{fraction}{}", pick(u, OFFSETS)?))
}
