//! An insertion-ordered map (Python's `OrderedDict` semantics, which the reference's bounded
//! caches rely on: replacing a key keeps its place, eviction takes the oldest), with O(log n)
//! operations so a hostile connection cannot make it quadratic.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

pub struct OrderedMap<K, V> {
    seq: u64,
    at: HashMap<K, u64>,
    items: BTreeMap<u64, (K, V)>,
}

impl<K, V> std::default::Default for OrderedMap<K, V> {
    fn default() -> Self {
        OrderedMap {
            seq: 0,
            at: HashMap::new(),
            items: BTreeMap::new(),
        }
    }
}

impl<K: Hash + Eq + Clone, V> OrderedMap<K, V> {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        let s = self.at.get(k)?;
        self.items.get(s).map(|(_, v)| v)
    }

    /// `d[k] = v`: a new key goes last, an existing one keeps its place.
    pub fn insert(&mut self, k: K, v: V) {
        if let Some(s) = self.at.get(&k) {
            if let Some(slot) = self.items.get_mut(s) {
                slot.1 = v;
                return;
            }
        }
        self.seq += 1;
        self.at.insert(k.clone(), self.seq);
        self.items.insert(self.seq, (k, v));
    }

    /// `d[k] = v; d.move_to_end(k)`.
    pub fn insert_last(&mut self, k: K, v: V) {
        self.remove(&k);
        self.insert(k, v);
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        let s = self.at.remove(k)?;
        self.items.remove(&s).map(|(_, v)| v)
    }

    /// `popitem(last=False)`.
    pub fn pop_first(&mut self) -> Option<(K, V)> {
        let (_, (k, v)) = self.items.pop_first()?;
        self.at.remove(&k);
        Some((k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.items.values().map(|(k, _)| k)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.items.values().map(|(k, v)| (k, v))
    }

    /// Keeps only the entries for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        let at = &mut self.at;
        self.items.retain(|_, (k, v)| {
            let ok = keep(k, v);
            if !ok {
                at.remove(k);
            }
            ok
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_dict_semantics() {
        let mut m = OrderedMap::default();
        m.insert("a", 1);
        m.insert("b", 2);
        m.insert("a", 3);
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(m.get(&"a"), Some(&3));
        m.insert_last("a", 4);
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(m.pop_first(), Some(("b", 2)));
        m.retain(|_, v| *v != 4);
        assert!(m.is_empty());
    }
}
