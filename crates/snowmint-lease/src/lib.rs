//! Worker-id ownership and restart safety for snowmint generators.
