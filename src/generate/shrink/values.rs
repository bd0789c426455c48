//! Simpler JSON values, for a call's arguments and the envelope: each
//! candidate counted without building it, and built by its index.

use serde_json::{Map, Value};

/// How many members a container's candidates touch, and how many
/// candidates of each member are tried (keeps the edit list short for
/// wide values; the greedy loop comes back to the rest after a success).
const WIDE: usize = 24;
const PER_MEMBER: usize = 3;
const DEEP: usize = 4;

/// The number of simpler JSON values [`value_candidate`] offers for `v`:
/// empty, fewer members, simpler members (to depth [`DEEP`]), a shorter
/// string, a shorter number. Counted without building them.
pub(super) fn value_candidate_count(v: &Value, depth: usize) -> usize {
    let members = |children: &mut dyn Iterator<Item = &Value>| -> usize {
        if depth >= DEEP {
            return 0;
        }
        children
            .take(WIDE)
            .map(|c| value_candidate_count(c, depth + 1).min(PER_MEMBER))
            .sum()
    };
    match v {
        Value::Object(o) if !o.is_empty() => {
            let fewer = if o.len() > 1 { o.len().min(WIDE) } else { 0 };
            1 + fewer + members(&mut o.values())
        }
        Value::Array(a) if !a.is_empty() => {
            let half = (a.len() > 2) as usize;
            let fewer = if a.len() > 1 { a.len().min(WIDE) } else { 0 };
            1 + half + fewer + members(&mut a.iter())
        }
        Value::String(s) if !s.is_empty() => {
            1 + (!crate::model::truncate_utf8(s, s.len() / 2).is_empty()) as usize
        }
        // Shorter digits only, so that every edit makes the case smaller.
        Value::Number(n) if n.to_string().len() > 1 => 1,
        _ => 0,
    }
}

/// Candidate `k` (in `0..value_candidate_count(v)`) of a simpler `v`.
pub(super) fn value_candidate(v: &Value, depth: usize, mut k: usize) -> Option<Value> {
    match v {
        Value::Object(o) if !o.is_empty() => {
            if k == 0 {
                return Some(Value::Object(Map::new()));
            }
            k -= 1;
            if o.len() > 1 {
                let n = o.len().min(WIDE);
                if k < n {
                    let mut smaller = o.clone();
                    let key = o.keys().nth(k)?;
                    smaller.shift_remove(key);
                    return Some(Value::Object(smaller));
                }
                k -= n;
            }
            if depth < DEEP {
                for (key, child) in o.iter().take(WIDE) {
                    let n = value_candidate_count(child, depth + 1).min(PER_MEMBER);
                    if k < n {
                        let mut o2 = o.clone();
                        o2.insert(key.clone(), value_candidate(child, depth + 1, k)?);
                        return Some(Value::Object(o2));
                    }
                    k -= n;
                }
            }
            None
        }
        Value::Array(a) if !a.is_empty() => {
            if k == 0 {
                return Some(Value::Array(Vec::new()));
            }
            k -= 1;
            if a.len() > 2 {
                if k == 0 {
                    return Some(Value::Array(a[..a.len() / 2].to_vec()));
                }
                k -= 1;
            }
            if a.len() > 1 {
                let n = a.len().min(WIDE);
                if k < n {
                    let mut smaller = a.clone();
                    smaller.remove(k);
                    return Some(Value::Array(smaller));
                }
                k -= n;
            }
            if depth < DEEP {
                for (i, child) in a.iter().enumerate().take(WIDE) {
                    let n = value_candidate_count(child, depth + 1).min(PER_MEMBER);
                    if k < n {
                        let mut a2 = a.clone();
                        a2[i] = value_candidate(child, depth + 1, k)?;
                        return Some(Value::Array(a2));
                    }
                    k -= n;
                }
            }
            None
        }
        Value::String(s) if !s.is_empty() => match k {
            0 => Some(Value::String(String::new())),
            1 => {
                let half = crate::model::truncate_utf8(s, s.len() / 2);
                (!half.is_empty()).then(|| Value::String(half.to_owned()))
            }
            _ => None,
        },
        Value::Number(n) if k == 0 && n.to_string().len() > 1 => Some(Value::from(0)),
        _ => None,
    }
}

/// [`value_candidate_count`] of the envelope as an object, without copying it.
pub(super) fn envelope_candidate_count(env: &Map<String, Value>) -> usize {
    let fewer = if env.len() > 1 {
        env.len().min(WIDE)
    } else {
        0
    };
    let members: usize = env
        .values()
        .take(WIDE)
        .map(|c| value_candidate_count(c, 1).min(PER_MEMBER))
        .sum();
    1 + fewer + members
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::SplitMix64;

    #[test]
    fn value_candidates_are_counted_exactly_and_smaller() {
        let mut rng = SplitMix64::new(3);
        for _ in 0..200 {
            let v = crate::generate::text::value(&mut rng, 6, 600);
            let n = value_candidate_count(&v, 0);
            for k in 0..n {
                let c = value_candidate(&v, 0, k)
                    .unwrap_or_else(|| panic!("candidate {k} of {n} missing for {v}"));
                assert!(crate::body::value_size(&c) < crate::body::value_size(&v));
            }
            assert_eq!(value_candidate(&v, 0, n), None);
        }
    }
}
