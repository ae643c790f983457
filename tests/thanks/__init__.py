"""A capability as a maintainer would add one, kept with the tests that prove the contract: a
🙏 button on every card; its press keeps who thanked in a table of its own, counts it, and has
a reply written under the card, a kind of write of its own, in its own words. Its folder, its
words, one line of a registry: nothing of the relay's core changes for it."""
