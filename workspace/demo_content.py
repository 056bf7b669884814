"""The demo workspace: plain data plus the one function that writes it through the services.

Tasks give their due date as a day offset from the day the seed runs (negative = in the past,
None = no due date), so a fresh install always has some overdue work and some due this week.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from project.users import User
from workspace import services

# key -> (name, description); tasks and notes refer to projects by key, None = no project.
PROJECTS: dict[str, tuple[str, str]] = {
    "atlas": ("Atlas", "Relaunch of the marketing website with a new design, clearer copy and fewer pages."),
    "harbor": ("Harbor", "Beta programme and public release of version 2.0 of the mobile app."),
    "home": ("Home", "Personal errands and life admin that should not fall through the cracks."),
}

# 40 tasks: 16 todo, 8 in_progress, 16 completed.
TASKS: list[dict] = [
    # Atlas
    {
        "project": "atlas",
        "title": "Finalize homepage design mockups",
        "status": "in_progress",
        "priority": "high",
        "due": 2,
        "description": "Incorporate the round 2 feedback: bigger product screenshot, dark navigation, logos above the fold.",
    },
    {"project": "atlas", "title": "Design review for pricing page with Maya", "status": "todo", "priority": "medium", "due": 4},
    {
        "project": "atlas",
        "title": "Write copy for the new features section",
        "status": "todo",
        "priority": "medium",
        "due": 6,
        "description": "Follow the copy style guide; each feature ends with what the user can now do.",
    },
    {
        "project": "atlas",
        "title": "Migrate blog posts from the old site templates",
        "status": "in_progress",
        "priority": "medium",
        "due": 9,
    },
    {
        "project": "atlas",
        "title": "Set up redirects for retired URLs",
        "status": "todo",
        "priority": "high",
        "due": -2,
        "description": "Every URL in the top 50 by traffic must resolve before launch.",
    },
    {"project": "atlas", "title": "Run Lighthouse audit on staging", "status": "completed", "priority": "medium", "due": -3},
    {"project": "atlas", "title": "Audit analytics events before the cutover", "status": "todo", "priority": "low", "due": None},
    {"project": "atlas", "title": "Approve final color palette and typography", "status": "completed", "priority": "high", "due": -12},
    {"project": "atlas", "title": "Run kickoff workshop with the marketing team", "status": "completed", "priority": "medium", "due": -30},
    {"project": "atlas", "title": "Collect customer logos and quotes", "status": "completed", "priority": "low", "due": -18},
    {"project": "atlas", "title": "Hand off design tokens to front-end", "status": "completed", "priority": "medium", "due": -8},
    {"project": "atlas", "title": "Draft launch announcement email", "status": "todo", "priority": "high", "due": 7},
    {
        "project": "atlas",
        "title": "Fix mobile navigation overlap on small screens",
        "status": "in_progress",
        "priority": "urgent",
        "due": -1,
    },
    {"project": "atlas", "title": "Book photographer for the team page", "status": "todo", "priority": "low", "due": None},
    # Harbor
    {
        "project": "harbor",
        "title": "Design review for onboarding screens",
        "status": "todo",
        "priority": "high",
        "due": 1,
        "description": "Walk through the no-account onboarding flow with design and engineering; bring the beta feedback summary.",
    },
    {"project": "harbor", "title": "Update app store screenshots with the new design", "status": "todo", "priority": "medium", "due": 10},
    {"project": "harbor", "title": "Triage crash reports from beta 3", "status": "in_progress", "priority": "urgent", "due": 0},
    {"project": "harbor", "title": "Invite second wave of beta testers", "status": "completed", "priority": "medium", "due": -2},
    {"project": "harbor", "title": "Write release notes for beta 3", "status": "completed", "priority": "medium", "due": -5},
    {"project": "harbor", "title": "Fix push notification opt-in on Android 14", "status": "in_progress", "priority": "high", "due": -3},
    {"project": "harbor", "title": "Set up TestFlight external testing group", "status": "completed", "priority": "high", "due": -20},
    {
        "project": "harbor",
        "title": "Finalize dark mode design for settings screens",
        "status": "in_progress",
        "priority": "medium",
        "due": 6,
    },
    {"project": "harbor", "title": "Summarize beta survey results", "status": "todo", "priority": "medium", "due": 8},
    {"project": "harbor", "title": "Prepare go/no-go checklist for the public release", "status": "todo", "priority": "high", "due": 14},
    {"project": "harbor", "title": "Remove legacy sync code paths", "status": "todo", "priority": "low", "due": None},
    {
        "project": "harbor",
        "title": "Agree on analytics events for the onboarding funnel",
        "status": "completed",
        "priority": "medium",
        "due": -15,
    },
    {"project": "harbor", "title": "Ship beta 2 to internal testers", "status": "completed", "priority": "high", "due": -25},
    {
        "project": "harbor",
        "title": "Accessibility pass on onboarding (VoiceOver labels)",
        "status": "todo",
        "priority": "medium",
        "due": 12,
    },
    # Home
    {"project": "home", "title": "Renew passport", "status": "todo", "priority": "medium", "due": 21},
    {"project": "home", "title": "Book dentist appointment", "status": "todo", "priority": "low", "due": -4},
    {"project": "home", "title": "Pay electricity bill", "status": "completed", "priority": "high", "due": -6},
    {"project": "home", "title": "Call landlord about the leaking faucet", "status": "in_progress", "priority": "medium", "due": 1},
    {"project": "home", "title": "Buy birthday present for Sam", "status": "completed", "priority": "medium", "due": -1},
    {"project": "home", "title": "File last year's tax receipts", "status": "completed", "priority": "low", "due": -40},
    {"project": "home", "title": "Schedule car service", "status": "completed", "priority": "low", "due": -10},
    {"project": "home", "title": "Plan weekend trip to the coast", "status": "todo", "priority": "low", "due": None},
    # No project
    {"project": None, "title": "Submit expense report for the team offsite", "status": "todo", "priority": "high", "due": 2},
    {"project": None, "title": "Prepare agenda for 1:1 with Priya", "status": "in_progress", "priority": "medium", "due": 1},
    {"project": None, "title": "Read the Shape Up chapters on the betting table", "status": "completed", "priority": "low", "due": None},
    {"project": None, "title": "Update team wiki with the on-call rotation", "status": "completed", "priority": "medium", "due": -7},
]

# 15 notes: (project key or None, title, content). Content is plain text; paragraphs are separated by a blank line.
NOTES: list[tuple[str | None, str, str]] = [
    (
        "atlas",
        "Launch plan for the Atlas relaunch",
        "The relaunch goes live in three stages so we can back out of any one of them without touching the others. "
        "First we switch over the marketing pages only, keeping the blog and docs on the old stack for a week. "
        "Once redirects and analytics look clean, the blog moves over, and the docs follow after the next release. "
        "Launch day itself is a Tuesday morning so the whole team is around to watch the dashboards.\n\n"
        "Maya signs off on design, Jonas owns the redirects, and I run the go/no-go call the day before the launch. "
        "If the Lighthouse score on staging drops below 90 or any top-50 URL returns a 404, we postpone rather than patch live.",
    ),
    (
        "atlas",
        "Atlas kickoff meeting notes",
        "Attendees were marketing, design and two engineers from the web team. "
        "The main goal is a site that explains the product in under a minute, with fewer pages and clearer calls to action. "
        "Marketing wants to ship before the spring campaign, which gives us about six weeks. "
        "We agreed to cut the careers and press sections down to a single page each. "
        "Open question: whether pricing stays public or moves behind a contact form; Dana will bring data on that to the next sync.",
    ),
    (
        "atlas",
        "Decision: keep the current CMS for the relaunch",
        "We keep the current headless CMS for the relaunch instead of migrating to a new one. "
        "A migration would add at least three weeks, and the content team already knows the existing editor. "
        "The real problems were the templates and the page structure, not the CMS itself. "
        "We will revisit the choice after the launch if editing the new components turns out to be painful. "
        "Status: accepted, agreed with marketing and the web team.",
    ),
    (
        "atlas",
        "Homepage design feedback, round 2",
        "Feedback from the second review of the homepage mockups was mostly positive. "
        "The hero section reads much better with the shorter headline, but the product screenshot is too small on laptops. "
        "Everyone preferred the darker variant of the navigation bar. "
        "The customer logo strip should move above the features section so it is visible without scrolling. "
        "Maya will send updated mockups by the end of the week, and then we freeze the design.",
    ),
    (
        "atlas",
        "Copy style guide for the new site",
        "Write in the second person and keep sentences short; if a sentence needs a comma to breathe, it probably wants to be two. "
        "Use sentence case for headings and buttons. "
        "Avoid words like seamless, robust and revolutionary, since they say nothing a reader can check. "
        "Every feature description should end with what the reader can now do, not with what the product is. "
        "Numbers are written as digits, including in headlines.",
    ),
    (
        "harbor",
        "Launch retro checklist",
        "We run the retro for the Harbor 2.0 launch one week after the public release, once the first crash numbers have settled. "
        "Before the meeting, everyone adds what went well, what hurt and one thing they would change to the shared board. "
        "I will pull the crash-free session rate, the notification opt-in rate and the number of support tickets tagged beta.\n\n"
        "The review of the launch timeline comes first, because last time we ran out of time before getting to it. "
        "Every action item leaves the room with an owner and a date, or it gets dropped.",
    ),
    (
        "harbor",
        "Harbor beta weekly sync",
        "Beta 3 is out to about two hundred testers and the crash rate is down noticeably from beta 2. "
        "The biggest remaining crash is in the photo picker on older Android devices, and Lena is on it. "
        "Testers keep asking for a way to export their data, which is not in scope for 2.0 but should go on the roadmap. "
        "We agreed to freeze features at the end of next week and spend the remaining time on polish and performance. "
        "The next sync moves to Wednesday because of the onboarding design review.",
    ),
    (
        "harbor",
        "Decision: onboarding without an account wall",
        "In Harbor 2.0 new users can explore the app before creating an account. "
        "In beta 2 nearly half of new installs quit at the sign-up screen, and most of them never came back. "
        "Letting people try the app first means we have to keep their data locally and merge it when they sign up later. "
        "Engineering estimates a week of extra work for the merge, which we accept. "
        "Status: accepted; we will compare day-7 retention of the new flow against the old one.",
    ),
    (
        "harbor",
        "Beta tester feedback themes",
        "I went through the survey answers and the support inbox and grouped the feedback into a few themes. "
        "The new navigation is the most praised change; several testers said they can finally find settings without searching. "
        "Sync is the most common complaint, mostly about changes taking a long time to show up on a second device. "
        "A smaller group finds the new icons hard to tell apart at small sizes. "
        "I will share the full breakdown with design before the onboarding review.",
    ),
    (
        "harbor",
        "How we ship beta builds",
        "Beta builds are cut from the release branch every Thursday afternoon. "
        "Before tagging, the on-call engineer runs the smoke test list on one iPhone and one Android device. "
        "The build goes to internal testers first, and to external testers the next morning if nothing breaks overnight. "
        "Release notes live in the repository next to the changelog, so they are reviewed like code. "
        "If a build has to be pulled, post in the beta channel before anything else so support is not surprised.",
    ),
    (
        "home",
        "Weekend trip ideas",
        "Thinking about a weekend at the coast before it gets too cold. "
        "The small guesthouse we liked last year has rooms free on most weekends next month. "
        "The train takes about three hours, which beats driving in Friday traffic. "
        "I would like one day of walking along the cliffs and one lazy day with books. "
        "Need to check with Sam whether the first or the second weekend works better.",
    ),
    (
        "home",
        "Things to raise with the landlord",
        "The kitchen faucet has been dripping for two weeks and is getting worse. "
        "The bedroom window does not close properly, which will matter once the heating comes on. "
        "Ask whether the building plans to replace the broken intercom, and when. "
        "Also confirm that the rent change takes effect next quarter and not earlier.",
    ),
    (
        "home",
        "Reading list",
        "Books I want to get to this year, in no particular order. "
        "Shape Up, because half the team keeps quoting it. "
        "A novel for the train, probably The Dispossessed, since I never finished it. "
        "Something on cooking for one that does not mean eating the same dish four nights in a row. "
        "The plan is twenty minutes of reading before bed instead of scrolling.",
    ),
    (
        None,
        "1:1 with Priya",
        "Priya thinks the team is stretched across Atlas and Harbor at the same time, and she is right. "
        "We agreed I will say no to new requests until the Harbor public release is out. "
        "She wants me to present the beta results at the next all-hands, which is a good chance to practise. "
        "Feedback for me: write shorter status updates and lead with the decision that is needed. "
        "Next time we talk about what I want to work on after the launch.",
    ),
    (
        None,
        "Ideas for next quarter",
        "A few things I want to propose once both launches are behind us. "
        "We should set up a shared component library so the website and the app stop drifting apart visually. "
        "The beta programme worked well enough to keep running permanently with a smaller group. "
        "I would also like a quarterly cleanup week for the bugs that never make it into a sprint. "
        "None of this is decided; it is a list to bring to planning.",
    ),
]


def workspace_counts(*, user: User) -> dict[str, int]:
    return {"projects": user.projects.count(), "tasks": user.tasks.count(), "notes": user.notes.count()}


@transaction.atomic
def seed_demo_workspace(*, user: User) -> dict[str, int]:
    """Create the demo projects, tasks and notes for `user` and return the user's counts afterwards.

    Does not check for existing content; the caller decides whether seeding is wanted.
    """
    today, now = timezone.localdate(), timezone.now()
    project_ids = {
        key: services.create_project(user=user, name=name, description=description).pk for key, (name, description) in PROJECTS.items()
    }
    for task in TASKS:
        created = services.create_task(
            user=user,
            title=task["title"],
            description=task.get("description", ""),
            project_id=project_ids[task["project"]] if task["project"] else None,
            status=task["status"],
            priority=task["priority"],
            due_date=None if task["due"] is None else today + dt.timedelta(days=task["due"]),
        )
        if task["status"] == "completed":
            # Finished around when it was due (two days ago when it had no due date), never later than now.
            days_ago = max(0, 2 if task["due"] is None else -task["due"])
            services.backdate_completion(user=user, task_id=created.pk, completed_at=now - dt.timedelta(days=days_ago))
    for project_key, title, content in NOTES:
        services.create_note(user=user, title=title, content=content, project_id=project_ids[project_key] if project_key else None)
    return workspace_counts(user=user)
