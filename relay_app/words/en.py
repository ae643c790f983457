"""The chat's words in English (RELAY_LANGUAGE=en, the default)."""

from __future__ import annotations

from .catalogue import Plural, Words, english_plural

ENGLISH = Words(
    language="en",
    plural_forms=2,
    plural_rule=english_plural,
    unit_day="d",
    unit_hour="h",
    unit_minute="min",
    unit_second="s",
    glitchtip_alert="GlitchTip Alert",
    glitchtip_alert_issues=Plural(("GlitchTip Alert ({n} issue)", "GlitchTip Alert ({n} issues)")),
    source_heading="{source} · {heading}",
    untitled_issue="(untitled issue)",
    raised_in="in ",
    field_project="Project",
    field_environment="Environment",
    field_release="Release",
    field_server="Server Name",
    more_issues=Plural(
        (
            "…and {n} more issue GlitchTip did not attach: set GLITCHTIP_API_TOKEN for the "
            "relay to name it",
            "…and {n} more issues GlitchTip did not attach: set GLITCHTIP_API_TOKEN for the "
            "relay to name them",
        )
    ),
    more_issues_named=Plural(
        (
            "…and {n} more issue GlitchTip did not attach: named from GlitchTip in a message "
            "of its own",
            "…and {n} more issues GlitchTip did not attach: named from GlitchTip in a message "
            "of their own",
        )
    ),
    issue_label="Issue",
    unknown_payload="Webhook payload in a shape the relay does not know",
    monitor_down="DOWN",
    monitor_warning="WARNING",
    monitor_up="UP",
    monitor_unknown="UPTIME",
    unnamed_monitor="(unnamed monitor)",
    site_down="The monitored site has gone down.",
    site_up="The monitored site is back up.",
    more_monitors=Plural(
        ("…and {n} more monitor not shown here", "…and {n} more monitors not shown here")
    ),
    back_up_after="✅ {name} back up after {duration}",
    frame_where="{at} in {function}",
    level="Level: ",
    value="Value: ",
    seen_times=Plural(("seen {n} time", "seen {n} times")),
    new_issue="🆕 New issue, first seen {age} ago",
    first_seen="first seen {age} ago",
    alerts=Plural(("{n} alert", "{n} alerts")),
    digest_head="🗂 {alerts}, received {start} to {end} (over {span})",
    digest_sent_after="; sent {delay} after the first",
    cut_note="✂️ Cut to fit: each short id links to the whole issue in GlitchTip.",
    more_in_backlog=Plural(
        (
            "➕ {n} more issue in these alerts, not shown: see GlitchTip",
            "➕ {n} more issues in these alerts, not shown: see GlitchTip",
        )
    ),
    late_note="⏳ Late: GlitchTip sent this at {time}; delivered {delay} later.",
    repeat_note="↩️ Sent again: this alert may repeat an earlier message.",
    repeat_note_digest="↩️ Sent again: some of these alerts may repeat an earlier message.",
    button_resolve="✅ Resolve",
    button_ignore="🔕 Ignore…",
    button_ignore_forever="🔕 Forever",
    button_snooze_hour="🔕 1 h",
    button_snooze_day="🔕 24 h",
    button_snooze_events="🔕 Until {count} more events",
    button_back="◀️ Back",
    snoozed_until=" until {until}",
    snoozed_events=" until {count} more events",
    notice_cannot_snooze=(
        "{label}: the relay does not watch this issue, so it could not bring it back: choose "
        "Forever"
    ),
    summary_head="📋 Daily summary, {start} – {end}",
    summary_new="🆕 New: {labels}",
    summary_escalating="📈 Escalating: {labels}",
    summary_regressed="🔁 Back after being resolved: {labels}",
    summary_open="Still unresolved, most events first ({count}):",
    summary_open_line="• {label} · {events} · {spark} · {title}",
    summary_taken=" · 👀 {user}",
    summary_more="…and {count} more",
    summary_counts=(
        "Alerts: {delivered} delivered ({digested} in digests), {silenced} held by silences"
    ),
    summary_quiet=(
        "Nothing new since the last summary, and nothing the relay alerted on is still unresolved."
    ),
    command_issues="unresolved issues this chat receives, most events first",
    command_oncall="who is on call in each rotation",
    command_silences="what is muted in this chat, until when",
    command_status="what the relay knows of Telegram, GlitchTip and its queue",
    issues_answer="📋 Unresolved issues here, most events first ({count}):\n{lines}\n{read}",
    issues_read="🕑 As read {ago} ago.",
    issues_read_asking="🕑 As read {ago} ago; asking again now.",
    issues_not_read="🕑 Not read from the tracker yet; asking now.",
    issues_none="📋 No unresolved issue here that the relay alerted on in the last 7 days.",
    oncall_answer="👥 On call:\n{lines}",
    oncall_line="{name}: {person} until {until}, then {next}",
    oncall_none="👥 No rotation: the routes file has no [[rotation]].",
    oncall_covering=" (covering {person})",
    oncall_covers="Covers to come:\n{lines}",
    oncall_cover_line="{name}: {person} from {start} until {until}",
    command_cover="cover a rotation: /cover ROTATION [@person] [from TIME] [until TIME]",
    cover_made="🔁 {person} covers {rotation} from {start} until {until}, instead of {instead}.",
    cover_usage=(
        "Write /cover ROTATION, and if you like @person (else you), from TIME, until TIME or"
        " for 2h: /cover payments until 18:00"
    ),
    cover_not_allowed="Only people allowed to act on alerts may change who is on call.",
    cover_no_rotation="There is no rotation {rotation}: the routes file has {known}.",
    cover_no_person="{person} is neither @username nor tg:<user id> (a Telegram user id).",
    cover_unreadable_time=(
        "{time} is not a time: write 18:00, 10.12 18:00, 2026-12-10 18:00, or for 2h."
    ),
    cover_past="That time is over: a cover must end later than now.",
    cover_backwards="That cover ends before it starts.",
    cover_too_long=(
        "A cover lasts at most {days} days: a longer change belongs in the routes file."
    ),
    cover_too_far=("A cover ends by {last} at the latest: the relay's calendar goes no further."),
    cover_not_kept="The cover could not be kept now (the relay's spool): try again in a minute.",
    command_start="be called here, privately, when a route calls you directly",
    start_answer=(
        "👋 From now on, when an alert's route or step calls you directly, you get it here too,"
        " with its buttons. To stop, block the bot."
    ),
    start_unknown="Telegram did not say who you are: nothing was kept.",
    start_not_kept="This could not be kept now (the relay's spool): send /start again in a minute.",
    direct_call="📟 {said}",
    direct_open="Open it in the chat",
    direct_alert="An alert calls you:",
    with_hint="{call}\n{hint}",
    direct_hint=("📟 {people}: send /start to the bot in a private chat to be called there too."),
    handoff="🔁 On-call handoff, {rotation}: {person} is on call until {until}, then {next}.",
    silences_answer="🔇 Muted in this chat:\n{lines}",
    silences_line="{what} until {until} ({by})",
    silences_none="🔊 Nothing is muted in this chat.",
    status_answer="Telegram: {telegram}{services}\nQueue: {queue}{more}",
    status_telegram_up="answers",
    status_telegram_down="not answering; asked again every few seconds",
    status_queue="{pending} waiting, {dead} dead letters",
    link_card="🔗 {label} · {status} · {events}",
    link_card_unresolved="unresolved",
    link_card_resolved="resolved",
    link_card_ignored="ignored",
    link_not_followed="🔒 Not an issue this chat follows.",
    answer_busy="⏳ {count} answers in a row at most: ask again in {seconds} s.",
    trend_24h="24 h: {spark}",
    notice_choose="{label}: choose under the message for how long to ignore it",
    notice_snoozed_until="Ignored {label} in GlitchTip until {until}",
    notice_snoozed_events="Ignored {label} in GlitchTip until {count} more events",
    snooze_back_time=(
        "🔔 {label} is back: {user} ignored it until {until}, and that time has come"
    ),
    snooze_back_events=(
        "🔔 {label} is back: {count} more events since {user} ignored it until {events} more events"
    ),
    button_reopen="↩️ Reopen",
    button_mute="🔇 Mute 1 h",
    button_unmute="🔊 Unmute",
    resolved_by="✅ Resolved by {user} at {time}",
    ignored_by="🔕 Ignored by {user} at {time}",
    reopened_by="↩️ Reopened by {user} at {time}",
    issue_resolved_by="✅ {label} resolved by {user} at {time}",
    issue_ignored_by="🔕 {label} ignored by {user} at {time}",
    issue_reopened_by="↩️ {label} reopened by {user} at {time}",
    resolved_in_glitchtip="✅ Resolved in GlitchTip at {time}",
    ignored_in_glitchtip="🔕 Ignored in GlitchTip at {time}",
    reopened_in_glitchtip="↩️ Reopened in GlitchTip at {time}",
    issue_resolved_in_glitchtip="✅ {label} resolved in GlitchTip at {time}",
    issue_ignored_in_glitchtip="🔕 {label} ignored in GlitchTip at {time}",
    issue_reopened_in_glitchtip="↩️ {label} reopened in GlitchTip at {time}",
    notice_resolved="Resolved {label} in GlitchTip",
    notice_ignored="Ignored {label} in GlitchTip",
    notice_reopened="Reopened {label} in GlitchTip",
    notice_asking="⏳ Asked GlitchTip about {label}: the message will show when it is done",
    press_failed_late="⚠️ {user}'s press on {label} did not change it: {why}",
    not_updated=" (the message could not be updated)",
    press_unknown=(
        "This button is not one this relay knows: the message is older than the relay keeps "
        "buttons for, or it was not sent by this relay."
    ),
    press_not_allowed=(
        "You may not act on alerts here: your Telegram user id is not in the relay's list."
    ),
    press_unavailable="The relay cannot read its records right now; nothing was changed. Try "
    "again.",
    press_out_of_date=(
        "This button is out of date: the issue was changed since it was shown. Nothing was "
        "done; the message shows what can be done now."
    ),
    recall_taker=(
        "⏰ {label} is still open, {taker}'s for {duration}: still on it? Resolve it, or let it"
        " go and the calls go on; in {duration} more it is nobody's."
    ),
    report_head="📊 On call, {start} – {end}",
    report_alerts="Alerts: {alerts} messages about {issues} issues",
    report_take="Time to take: median {median}, worst {worst} ({taken} taken)",
    report_take_none="Time to take: none was taken",
    report_resolve="Time to resolve: median {median}, worst {worst} ({resolved} resolved)",
    report_resolve_none="Time to resolve: none was resolved in the chat",
    report_calls="Calls made: {calls}",
    report_takers="Who took what: {takers}",
    report_open="Still open ({count}):",
    report_open_none="Nothing is still open.",
    report_open_line="• {label} · {title} · {who}",
    report_more="…and {count} more",
    span_seconds="{n} s",
    span_minutes="{n} min",
    span_hours="{n} h",
    recall_lapsed=(
        "⏰ No word from {taker} on {label} in {duration}: it is nobody's again, and the calls"
        " go on."
    ),
    escalation_call="⏰ Nobody has taken this alert in {minutes} min: {people}",
    escalation_call_issues="⏰ Nobody has taken {labels} in {minutes} min: {people}",
    escalating="📈 Escalating: {count} events in the last hour · 24 h: {spark}",
    named_hidden=(
        "🔎 Named from GlitchTip: an alert counted {total} issues and attached {attached}; "
        "these are the others"
    ),
    notice_muted="Muted {label} in this chat until {until}; GlitchTip is not changed",
    notice_unmuted="Unmuted {label} in this chat",
    notice_not_muted="{label} was no longer muted here",
    silence_over="🔊 Silence over ({what}, {start} to {end}): {alerts} held meanwhile",
    silence_listed_first="; the first {count} are listed",
    matcher_issue="issue {value}",
    matcher_project="project {value}",
    matcher_environment="environment {value}",
    matcher_title="title containing “{value}”",
    comment_author="{author} in Telegram:",
    comment_posted="💬 Posted as a comment on {label} in GlitchTip.",
    comment_not_posted="Your reply was not posted to GlitchTip: {why}",
    reply_which_issue=(
        "This message is about several issues: reply again beginning with the short id of the "
        "one you mean ({labels})."
    ),
    reply_not_kept=(
        "The relay no longer keeps what this message was about; comment on the issue in GlitchTip."
    ),
    glitchtip_timeout="it did not answer in time",
    glitchtip_refused_connection="it refused the connection",
    glitchtip_unresolvable="its address could not be found",
    glitchtip_connection_failed="the connection failed",
    glitchtip_unreachable=(
        "GlitchTip could not be reached ({why}); nothing was changed. Try again in a while; if "
        "it goes on, tell the relay's operator."
    ),
    glitchtip_failing="GlitchTip is failing ({detail}); nothing was changed. Try again in a while.",
    glitchtip_operator="GlitchTip refused the change; the relay's operator has the details.",
    glitchtip_issue_gone=(
        "GlitchTip has no such issue any more (deleted, or in an organization the token's user "
        "is not in); nothing was changed."
    ),
    glitchtip_refused="GlitchTip refused the change ({detail}).",
    mention_line="🔔 For {people}",
    mention_user="user {id}",
    mentions_lost="⚠️ Whom this alert calls could not be worked out: the relay's log says why.",
    test_message=(
        "✅ <b>relay_app test message</b>\n"
        "Sent by <code>relay-app check --send</code>: GlitchTip alerts for this chat will arrive "
        "here."
    ),
)
