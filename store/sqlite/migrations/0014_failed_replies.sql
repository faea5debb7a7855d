-- A bot's reply knows the message it answers, and one that stands for a
-- failed turn (the apology said when a brain failed) says so, so that a
-- page can show it as a failure and offer to send that message again.
--
-- reply_to_id is the stored ID of the answered message, 0 when none. It
-- declares no reference: retention may delete the message it names
-- before the reply, and a reader treats an ID it cannot find as none.
ALTER TABLE messages ADD COLUMN reply_to_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN failed INTEGER NOT NULL DEFAULT 0 CHECK (failed IN (0, 1));
