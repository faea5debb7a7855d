-- A group message that addresses several bots gets their replies in the
-- order they were addressed: each turn after the first waits for the one
-- before it.
ALTER TABLE turns ADD COLUMN after_turn INTEGER REFERENCES turns (id);
