"""The press a person makes on a card's button, walked down the stages a webhook walks too, one
module each, each entered once and in order:

1. `receive.py`: the update read into a press, acted on once whoever delivers it again;
2. `route.py`: the button's verb and the card it names found (its owner: the core, or the
   capability that registered it), on the very message it was pressed on;
3. `hold.py`: whether it may act: someone allowed, on a button the row still shows, on an issue
   something can bring back (Ignore's timed choices);
4. `queue.py`: the change claimed on the card, so that of presses at the same moment one acts
   (Ignore's choices opened or put away, claimed the same way);
5. `attempt.py`: the issue's tracker asked, the press answered early if it is slow;
6. `record.py`: what the press leaves: the card's edit queued, the change shown on the chat's
   other messages of the issue, the log, the count and the answer; or, refused, the claim
   taken back and the presser told.

`presses.py` walks a press down them: after the hold, a capability's verb goes to its owner
(On it to the takes, Mute to the silences: what it asks of the card, its edit and its calls
stopped, is the record's); `told.py` is how a press is answered, once."""
